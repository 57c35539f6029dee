package rules

import (
	"fmt"
	"strconv"
	"time"
)

// Journal timestamps (__REALTIME_TIMESTAMP) carry no time zone, but the
// spec wants times "with the offset of the source". Engines print local
// wall-clock stamps in their lines (their profiles' local_time); comparing
// one with the entry's journal time gives the host's UTC offset.

// ZoneOf infers the UTC offset of the host that wrote line at journal time
// at, from the first engine profile's local_time stamp found in the line
// (e.g. vLLM's "INFO MM-DD HH:MM:SS", SGLang's "[YYYY-MM-DD HH:MM:SS]"). A
// stamp without a year takes at's, or the neighbouring one around New
// Year. The offset is rounded to a quarter hour; ok is false when no
// profile's stamp is in the line or the difference is not a plausible
// offset (over 14 h: the line was logged long after).
func (s *Set) ZoneOf(line string, at time.Time) (loc *time.Location, ok bool) {
	if at.IsZero() {
		return nil, false
	}
	u := at.UTC()
	local, found := time.Time{}, false
	for _, e := range s.engines {
		for _, re := range e.localTime {
			m := re.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			get := func(name string) (int, bool) {
				i := re.SubexpIndex(name)
				if i < 0 || m[i] == "" {
					return 0, false
				}
				n, err := strconv.Atoi(m[i])
				return n, err == nil
			}
			mo, _ := get("month")
			d, _ := get("day")
			h, _ := get("hour")
			mi, _ := get("minute")
			sec, _ := get("second")
			y, hasYear := get("year")
			if !hasYear {
				y = u.Year()
			}
			local = time.Date(y, time.Month(mo), d, h, mi, sec, 0, time.UTC)
			if !hasYear {
				// Around New Year the local date may lie in the other year.
				if diff := local.Sub(u); diff > 180*24*time.Hour {
					local = local.AddDate(-1, 0, 0)
				} else if diff < -180*24*time.Hour {
					local = local.AddDate(1, 0, 0)
				}
			}
			found = true
			break
		}
		if found {
			break
		}
	}
	if !found {
		return nil, false
	}
	const quarter = 15 * time.Minute
	off := local.Sub(u.Truncate(time.Second)).Round(quarter)
	if off > 14*time.Hour || off < -14*time.Hour {
		return nil, false
	}
	secs := int(off.Seconds())
	if secs == 0 {
		return time.UTC, true
	}
	sign, a := '+', secs
	if a < 0 {
		sign, a = '-', -a
	}
	return time.FixedZone(fmt.Sprintf("UTC%c%02d:%02d", sign, a/3600, a%3600/60), secs), true
}
