package early

import "testing"

func TestBatch(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"explain", "a.json"}, true},
		{[]string{"replay", "--db", "x.db", "a.json"}, true},
		{[]string{"ladder"}, true},
		{[]string{"fit", "--target", "x"}, true},
		{[]string{"serve", "--db", "x.db"}, false},
		{[]string{"watch"}, false},
		{[]string{"--rules", "dir", "explain"}, false}, // a flag first: batchGC advises instead
		{[]string{"explainx"}, false},
		{nil, false},
	} {
		if got := Batch(c.args); got != c.want {
			t.Errorf("Batch(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

func TestProfilesMemory(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"explain", "--memprofile", "m.pprof", "a.json"}, true},
		{[]string{"replay", "--db", "x.db", "--memprofile=m.pprof", "a.json"}, true},
		{[]string{"explain", "--cpuprofile", "c.pprof", "a.json"}, false},
		{[]string{"explain", "memprofile"}, false},
		{[]string{"explain", "--memprofiles"}, false},
		{nil, false},
	} {
		if got := ProfilesMemory(c.args); got != c.want {
			t.Errorf("ProfilesMemory(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
