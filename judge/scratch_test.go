package judge

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
)

// TestSharedScratchJudgesAlike: judges that share one line buffer
// (ShareScratch, as a tracker's do), fed their lines interleaved, judge
// every corpus log as a judge with its own buffer does.
func TestSharedScratchJudgesAlike(t *testing.T) {
	paths, _ := filepath.Glob("../testdata/corpus/*/log.txt")
	if len(paths) < 20 {
		t.Fatalf("%d corpus logs", len(paths))
	}
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := func(i int, l string) domain.Evidence {
		return domain.Evidence{Time: at.Add(time.Duration(i) * time.Second), Message: l}
	}
	var shared rules.Line
	for k := 0; k+1 < len(paths); k += 2 {
		var logs [2][]string
		for i := range logs {
			b, err := os.ReadFile(paths[k+i])
			if err != nil {
				t.Fatal(err)
			}
			logs[i] = strings.Split(string(b), "\n")
		}
		var own, both [2]*Judge
		for i := range logs {
			own[i], both[i] = New(set, "", Options{}), New(set, "", Options{})
			both[i].ShareScratch(&shared)
		}
		for n := 0; n < len(logs[0]) || n < len(logs[1]); n++ {
			for i := range logs {
				if n < len(logs[i]) {
					own[i].Line(logs[i][n], ev(n, logs[i][n]))
					both[i].Line(logs[i][n], ev(n, logs[i][n]))
				}
			}
		}
		for i := range logs {
			want := own[i].Judge(&domain.Attempt{ID: "a"}, End{Ended: true, Text: true})
			got := both[i].Judge(&domain.Attempt{ID: "a"}, End{Ended: true, Text: true})
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: sharing a line buffer judged %s/%s, alone %s/%s", paths[k+i], got.Verdict, got.Phase, want.Verdict, want.Phase)
			}
		}
	}
}
