package report

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// BootView is a boot in progress as `analyzer watch` shows it (from GET
// /api/v1/boots). ETA50/ETA90 and PhaseP50/PhaseP90 are nil with no
// history to tell them.
type BootView struct {
	Host, Unit, Phase  string
	Elapsed, InPhase   time.Duration
	ETA50, ETA90       *time.Duration
	Basis              int
	PhaseP50, PhaseP90 *time.Duration
	StallLimit         time.Duration
	Stalled            bool
}

// barWidth is the width of a boot's progress bar, in cells.
const barWidth = 12

// BootLine is one boot's line: host and unit, the phase and how long it
// has been in it, a bar of the time elapsed against the expected time to
// ready, and the ETA (median, 90 % bound, the boots it rests on), or what
// stalled; cut to width runes (<= 0: no cut). Text only: safe for a pipe.
func BootLine(b BootView, width int) string {
	var s strings.Builder
	fmt.Fprintf(&s, "%s %s  %s %s", Safe(b.Host), Safe(b.Unit), Safe(b.Phase), short(b.InPhase))
	if b.ETA50 != nil && b.ETA90 != nil {
		frac := 1.0
		if total := b.Elapsed + *b.ETA50; total > 0 {
			frac = float64(b.Elapsed) / float64(total)
		}
		n := min(int(frac*barWidth+0.5), barWidth)
		fmt.Fprintf(&s, "  [%s%s] %s", strings.Repeat("#", n), strings.Repeat("-", barWidth-n), short(b.Elapsed))
	} else {
		fmt.Fprintf(&s, "  %s", short(b.Elapsed))
	}
	switch {
	case b.Stalled && b.PhaseP50 != nil && b.PhaseP90 != nil:
		fmt.Fprintf(&s, "  STALLED: %s for %s, usually %s-%s", Safe(b.Phase), short(b.InPhase), short(*b.PhaseP50), short(*b.PhaseP90))
	case b.Stalled:
		fmt.Fprintf(&s, "  STALLED: nothing printed for %s or more", short(b.StallLimit))
	case b.ETA50 != nil && b.ETA90 != nil:
		fmt.Fprintf(&s, "  ready in ~%s (<=%s, %d boots)", short(*b.ETA50), short(*b.ETA90), b.Basis)
	default:
		s.WriteString("  no history")
	}
	out := s.String()
	if width > 0 && utf8.RuneCountInString(out) > width {
		r := []rune(out)
		out = string(r[:width])
	}
	return out
}

// short is a duration in at most two units: 45s, 4m12s, 2h5m.
func short(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}
