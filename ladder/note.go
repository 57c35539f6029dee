package ladder

import (
	"fmt"
	"strings"

	"github.com/llmfleet/analyzer/domain"
)

// verdictPhrase names a verdict in a sentence.
func verdictPhrase(v domain.Verdict) string {
	switch v {
	case domain.VerdictOOMGraphCapture:
		return "OOM at graph capture"
	case domain.VerdictOOMKVAlloc:
		return "OOM allocating the KV cache"
	case domain.VerdictOOMProfile:
		return "OOM in the profiling run"
	case domain.VerdictOOMRuntime:
		return "OOM while serving"
	case domain.VerdictKVCacheInsufficient:
		return "refusal for lack of KV cache"
	case domain.VerdictOOMWeights:
		return "OOM loading the weights"
	}
	return string(v)
}

// sizingKeys are compared when a note relates two rungs.
var sizingKeys = []string{domain.ShapeMaxNumSeqs, domain.ShapeMaxModelLen, domain.ShapeKVCacheDtype, domain.ShapeKVCacheMemoryBytes}

// compare says how cur's sizing differs from ref's: "at a smaller
// max_model_len (245760 vs 262144)", or "with the same shape".
func compare(ref, cur *Rung) string {
	var parts []string
	for _, k := range sizingKeys {
		a, aok := ref.Shape.Int(k)
		b, bok := cur.Shape.Int(k)
		switch {
		case aok && bok && a != b:
			word := "larger"
			if b < a {
				word = "smaller"
			}
			parts = append(parts, fmt.Sprintf("a %s %s (%d vs %d)", word, k, b, a))
		case !aok && !bok && ref.Shape.String(k) != cur.Shape.String(k):
			parts = append(parts, fmt.Sprintf("%s %s instead of %s", k, valueText(orNil(cur.Shape, k)), valueText(orNil(ref.Shape, k))))
		}
	}
	if len(parts) > 0 {
		return "at " + strings.Join(parts, " and ")
	}
	if d := shapeDiff(ref.Shape, cur.Shape, map[string]bool{domain.ShapeServedModelName: true}); len(d) > 0 {
		var cs []string
		for _, c := range d {
			cs = append(cs, c.String())
		}
		return "at the same size (" + strings.Join(cs, ", ") + ")"
	}
	return "with the same shape"
}

// relative is compare phrased against a rung: "at a smaller
// max_model_len (237568 vs 245760) than", or "with the same shape as"; when
// the sizing is the same.
func relative(ref, cur *Rung) string {
	c := compare(ref, cur)
	if strings.HasPrefix(c, "with the same") || strings.HasPrefix(c, "at the same size") {
		c += " as"
	} else {
		c += " than"
	}
	return c
}

// kvNote tells when the engine sized another KV cache than for ref while
// the set shape stayed the same: "; the KV cache is 606208 tokens (rung 1:
// 687388)".
func kvNote(ref, cur *Rung) string {
	if compare(ref, cur) != "with the same shape" || ref.KVTokens == nil || cur.KVTokens == nil || *ref.KVTokens == *cur.KVTokens {
		return ""
	}
	return fmt.Sprintf("; the KV cache is %d tokens (rung %d: %d)", *cur.KVTokens, ref.N, *ref.KVTokens)
}

func orNil(s domain.Shape, k string) any {
	if v, ok := s[k]; ok {
		return v
	}
	return nil
}

func seconds(p *float64) string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf(" after %.0f s", *p)
}

// RungNote returns one sentence that places rung n (from 1) within its
// ladder, for the rung's root-cause note: "rung 2 of ladder frank-primary:
// same OOM at graph capture as rung 1, at a smaller max_model_len (245760
// vs 262144)". It returns "" for an unknown rung. Build stores it in
// Rung.Note.
func RungNote(l *Ladder, n int) string {
	r := l.Rung(n)
	if r == nil {
		return ""
	}
	head := fmt.Sprintf("rung %d of ladder %s", n, l.Target)
	var prev *Rung
	if n > 1 {
		prev = l.Rung(n - 1)
	}
	var body string
	switch {
	case r.Boot == ClassCapacityFail:
		var same *Rung
		for k := n - 1; k >= 1; k-- {
			if l.Rung(k).Verdict == r.Verdict {
				same = l.Rung(k)
				break
			}
		}
		switch {
		case same != nil:
			body = fmt.Sprintf("same %s as rung %d, %s", verdictPhrase(r.Verdict), same.N, compare(same, r))
			if compare(same, r) == "with the same shape" && same.N == n-1 {
				body += ": a restart, not a new rung"
			}
		case prev != nil && prev.Boot == ClassPass:
			body = fmt.Sprintf("%s %s rung %d, which booted%s", verdictPhrase(r.Verdict), relative(prev, r), prev.N, kvNote(prev, r))
		default:
			body = fmt.Sprintf("%s at %s", verdictPhrase(r.Verdict), r.Summary)
		}
		if r.FreeAtFailure != "" {
			body += fmt.Sprintf(" (%s free", r.FreeAtFailure)
			if r.AllocAtFailure != "" {
				body += ", asked for " + r.AllocAtFailure
			}
			body += ")"
		}
	case r.Boot == ClassPass && r.Survive == ClassCapacityFail:
		body = fmt.Sprintf("boots (ready%s) but dies of %s: fails the survivable boundary", seconds(r.SecondsToReady), verdictPhrase(r.Verdict))
		for k := n - 1; k >= 1; k-- {
			if p := l.Rung(k); p.Boot == ClassPass && compare(p, r) == "with the same shape" {
				body += fmt.Sprintf("; rung %d booted the same shape", p.N)
				break
			}
		}
	case r.Class == ClassPass:
		body = fmt.Sprintf("passes (ready%s)", seconds(r.SecondsToReady))
		if prev != nil {
			switch prev.Class {
			case ClassCapacityFail:
				body += fmt.Sprintf(" %s rung %d, which failed with %s%s", relative(prev, r), prev.N, prev.Verdict, kvNote(prev, r))
			case ClassPass:
				body += fmt.Sprintf(" like rung %d, %s", prev.N, compare(prev, r))
			default:
				body += fmt.Sprintf(" after rung %d (%s), %s", prev.N, prev.Verdict, compare(prev, r))
			}
		} else {
			body += " at " + r.Summary
		}
	default:
		body = r.ClassNote
		if prev != nil && compare(prev, r) == "with the same shape" {
			body += fmt.Sprintf("; same shape as rung %d", prev.N)
		}
	}
	for _, b := range l.Boundaries {
		if b.Status != StatusFound && b.Status != StatusOpen {
			continue
		}
		if b.FailRung == n && r.Boot == ClassCapacityFail && b.Kind == KindBoot && b.Dimension != DimContract {
			body += fmt.Sprintf("; lowest failing %s at %s", b.Dimension, b.AtText)
		}
		if b.PassRung == n && b.Kind == KindSurvive && b.Dimension != DimContract {
			body += fmt.Sprintf("; highest passing %s at %s", b.Dimension, b.AtText)
			if b.Status == StatusFound {
				body += " (boundary found)"
			}
		}
	}
	return head + ": " + body + "."
}

// ladderNotes are the ladder-wide remarks: how the target was named,
// which units took part, rungs that are not capacity evidence, restarts
// of one shape, inconsistent boundaries.
func ladderNotes(l *Ladder) []string {
	notes := []string{}
	switch l.TargetFrom {
	case "unit":
		notes = append(notes, "no served_model_name: rungs grouped by unit family "+l.Target+".")
	case "container":
		notes = append(notes, "no served_model_name or unit: rungs grouped by container family "+l.Target+".")
	case "engine":
		notes = append(notes, "no served_model_name, unit or container: rungs grouped by engine only.")
	}
	if len(l.Units) > 1 {
		var parts []string
		for _, u := range l.Units {
			var ns []int
			for _, r := range l.Rungs {
				if r.Unit == u {
					ns = append(ns, r.N)
				}
			}
			parts = append(parts, u+" ("+rungList(ns)+")")
		}
		notes = append(notes, "one target under several units (probe and production): "+strings.Join(parts, ", ")+".")
	}
	// Rungs that are not capacity evidence, by verdict.
	byVerdict := map[domain.Verdict][]int{}
	var verdicts []domain.Verdict
	for _, r := range l.Rungs {
		if r.Boot != ClassOther {
			continue
		}
		if _, ok := byVerdict[r.Verdict]; !ok {
			verdicts = append(verdicts, r.Verdict)
		}
		byVerdict[r.Verdict] = append(byVerdict[r.Verdict], r.N)
	}
	for _, v := range verdicts {
		ns := byVerdict[v]
		r := l.Rung(ns[0])
		switch {
		case v.IsFailure():
			notes = append(notes, fmt.Sprintf("%s (%s) failed with %s, which is not a capacity failure: not taken as a capacity boundary.", rungList(ns), shortSummary(r.Shape), v))
		case v == domain.VerdictStopped:
			notes = append(notes, fmt.Sprintf("%s stopped before ready: neither a pass nor a failure.", rungList(ns)))
		default:
			notes = append(notes, fmt.Sprintf("%s still booting (%s): not counted yet.", rungList(ns), v))
		}
	}
	// Restarts of one shape with one failure.
	for i := 0; i < len(l.Rungs); {
		j := i
		for j+1 < len(l.Rungs) && l.Rungs[j+1].Verdict == l.Rungs[i].Verdict && l.Rungs[i].Verdict.IsFailure() &&
			compare(&l.Rungs[i], &l.Rungs[j+1]) == "with the same shape" {
			j++
		}
		if j > i {
			var ns []int
			for k := i; k <= j; k++ {
				ns = append(ns, k+1)
			}
			notes = append(notes, fmt.Sprintf("%s boot one shape (%s) and fail the same way (%s): restarts, not new rungs.",
				rungList(ns), shortSummary(l.Rungs[i].Shape), l.Rungs[i].Verdict))
		}
		i = j + 1
	}
	// Inconsistent boundaries, once per dimension and context.
	seen := map[string]bool{}
	for _, b := range l.Boundaries {
		if b.Status != StatusInconsistent || seen[b.Dimension+"\x00"+b.AtText] {
			continue
		}
		seen[b.Dimension+"\x00"+b.AtText] = true
		notes = append(notes, b.Note)
	}
	return notes
}
