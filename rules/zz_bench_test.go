package rules

import (
	"os"
	"strings"
	"testing"
)

func zzMsgs(b testing.TB) []string {
	raw, err := os.ReadFile("/dev/shm/" + os.Getenv("ZZ") + ".msgs")
	if err != nil {
		b.Skip(err)
	}
	return strings.Split(string(raw), "\n")
}

func BenchmarkZZNight(b *testing.B) {
	s, err := LoadBuiltin()
	if err != nil {
		b.Fatal(err)
	}
	msgs := zzMsgs(b)
	var dst []acMatch
	hits := 0
	for b.Loop() {
		hits = 0
		for _, m := range msgs {
			dst = s.pre.ac.findAll(dst[:0], m)
			hits += len(dst)
		}
	}
	b.ReportMetric(float64(hits)/float64(len(msgs)), "hits/line")
}

func TestZZCount(t *testing.T) {
	s, _ := LoadBuiltin()
	a := s.pre.ac
	msgs := zzMsgs(t)
	outs, cmps, ok, longCmp := 0, 0, 0, 0
	for _, text := range msgs {
		var st uint32
		for i := 0; i < len(text); i++ {
			st = uint32(a.trans[st<<a.shift+uint32(a.class[text[i]])])
			if st&acOut == 0 {
				continue
			}
			st &^= acOut
			end := i + 1
			for _, f := range a.outs[a.outAt[st]:a.outAt[st+1]] {
				outs++
				start := end - int(a.foldN[f])
				for _, li := range a.foldLits[a.foldAt[f]:a.foldAt[f+1]] {
					l := a.lits[li]
					cmps++
					if len(l) > int(a.foldN[f]) {
						longCmp++
					}
					if len(l) <= len(text)-start && text[start:start+len(l)] == l {
						ok++
					}
				}
			}
		}
	}
	t.Logf("lines %d outs %d cmps %d (long %d) ok %d", len(msgs), outs, cmps, longCmp, ok)
}
