package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// parseWhen reads a point in time the way journalctl --since and kubectl
// --since read them: RFC 3339; "2006-01-02", "2006-01-02 15:04" or
// "2006-01-02 15:04:05" in loc; "today", "yesterday", "now"; and a
// duration ago, "-1h", "1h30m" or whole days "30d" (the sign is optional).
func parseWhen(s string, now time.Time, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02", "2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	midnight := time.Date(now.In(loc).Year(), now.In(loc).Month(), now.In(loc).Day(), 0, 0, 0, 0, loc)
	switch s {
	case "now":
		return now, nil
	case "today":
		return midnight, nil
	case "yesterday":
		return midnight.AddDate(0, 0, -1), nil
	}
	ago := strings.TrimPrefix(s, "-")
	if d, err := time.ParseDuration(ago); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if days, ok := strings.CutSuffix(ago, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 && n <= 100000 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want RFC 3339, 2006-01-02[ 15:04[:05]], today, yesterday, now or a duration ago (-1h, 30m, 30d)", s)
}
