package early

import "testing"

func TestCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"explain", "a.json"}, "explain"},
		{[]string{"replay", "--db", "x.db", "a.json"}, "replay"},
		{[]string{"ladder"}, "ladder"},
		{[]string{"fit", "--target", "x"}, "fit"},
		{[]string{"serve", "--db", "x.db"}, ""},
		{[]string{"watch"}, ""},
		{[]string{"--rules", "dir", "explain"}, ""}, // a flag first: batchGC advises instead
		{[]string{"explainx"}, ""},
		{nil, ""},
	} {
		if got := Command(c.args); got != c.want {
			t.Errorf("Command(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}
