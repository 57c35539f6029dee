package rules

import (
	"reflect"
	"testing"
)

// FuzzFind is differential: on any line, from any cut, every built-in
// rule's find (start literals, alternatives, windows, literal sets) answers
// as its whole regex does.
func FuzzFind(f *testing.F) {
	set, err := LoadBuiltin()
	if err != nil {
		f.Fatal(err)
	}
	var rs []*Rule
	for _, r := range set.all {
		if !r.End && r.match != nil {
			rs = append(rs, r)
		}
	}
	f.Add("x CUDA out of memory. Tried to allocate 2.00 GiB of which 1 GiB is free", 0)
	f.Add("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 76.00 MiB. GPU 1 has a total capacity of 31.86 GiB of which 0 bytes free.", -1)
	f.Add("  File \"/x/csrc/custom_all_reduce.cu:368\", Insufficient memory", 3)
	vllm := set.Engine("vllm")
	l := &Line{}
	f.Fuzz(func(t *testing.T, line string, cut int) {
		prepareCut(set, vllm, l, line, min(cut, len(line)))
		for _, r := range rs {
			got := r.find(l, l.Text)
			if r.alts != nil {
				want := r.match.FindStringIndex(l.Text)
				if (got == nil) != (want == nil) || got != nil && got[0] != want[0] {
					t.Fatalf("%s on %q: %v, whole regex %v", r.ID, l.Text, got, want)
				}
				continue
			}
			if want := r.match.FindStringSubmatchIndex(l.Text); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s on %q: %v, whole regex %v", r.ID, l.Text, got, want)
			}
		}
	})
}
