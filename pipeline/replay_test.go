package pipeline_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/store"
)

// checkpointCounter is a database that counts Replay's checkpoints.
type checkpointCounter struct {
	*store.DB
	checkpoints atomic.Int32
}

func (c *checkpointCounter) Checkpoint(ctx context.Context) error {
	c.checkpoints.Add(1)
	return c.DB.Checkpoint(ctx)
}

// TestReplayCheckpointsOnASpareCore: with two cores Replay checkpoints
// while the saver stores the last batches; with one there is no core for
// that and it leaves the copying to Close. Both save the same attempts.
func TestReplayCheckpointsOnASpareCore(t *testing.T) {
	ctx := context.Background()
	saved := map[int][]string{}
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprint(procs, " cores"), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			db := &checkpointCounter{DB: openDB(t)}
			tally, err := pipeline.Replay(ctx, db, ruleSet(t), pipeline.FileInputs(fixtures[:1]), pipeline.ReplayOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n := db.checkpoints.Load(); procs == 1 && n != 0 || procs > 1 && n == 0 {
				t.Errorf("%d checkpoints with GOMAXPROCS %d", n, procs)
			}
			as, err := db.ListAttempts(ctx, store.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(as) == 0 || len(as) != tally.Attempts {
				t.Fatalf("%d attempts stored, replay saved %d", len(as), tally.Attempts)
			}
			for _, a := range as {
				saved[procs] = append(saved[procs], a.ID+" "+string(a.Verdict))
			}
			slices.Sort(saved[procs])
		})
	}
	if !slices.Equal(saved[1], saved[2]) {
		t.Errorf("one core saved %v\ntwo cores saved %v", saved[1], saved[2])
	}
}

var _ pipeline.ReplayStore = (*checkpointCounter)(nil)
