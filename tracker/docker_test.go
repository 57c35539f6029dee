package tracker_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dockerDriverJournal rewrites the night fixture's first three attempts as
// if their unit ran the engine with `docker run` and docker's journald log
// driver instead of podman: the container's records come from dockerd
// (_SYSTEMD_UNIT=docker.service, _COMM=dockerd) with a new
// CONTAINER_ID_FULL per run and one CONTAINER_NAME, and no podman events
// exist. With withRunOutput, the unit's `docker run -d` prints each
// container's id into the unit's journal.
func dockerDriverJournal(t *testing.T, withRunOutput bool) string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "examples", "dankserver-night-ladder.journal.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := filepath.Join(t.TempDir(), "docker.json")
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4<<20), 4<<20)
	starts := 0
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if rec["MESSAGE_ID"] == "7d4958e842da4a758f6c1cdc7b36dcc5" { // Starting ...
			if starts++; starts > 3 {
				break
			}
		}
		if _, ok := rec["PODMAN_EVENT"]; ok {
			if withRunOutput && rec["PODMAN_EVENT"] == "start" {
				// docker run -d prints the container id on the unit's stdout.
				run := map[string]any{}
				for _, k := range []string{"_SYSTEMD_UNIT", "_SYSTEMD_INVOCATION_ID", "_HOSTNAME", "__REALTIME_TIMESTAMP", "_BOOT_ID"} {
					run[k] = rec[k]
				}
				run["__CURSOR"] = "docker-run-" + rec["PODMAN_ID"].(string)[:12]
				run["_TRANSPORT"], run["SYSLOG_IDENTIFIER"], run["MESSAGE"] = "stdout", "docker", rec["PODMAN_ID"]
				writeRec(t, w, run)
			}
			continue // docker writes no podman events
		}
		if _, ok := rec["CONTAINER_ID_FULL"]; ok {
			rec["_SYSTEMD_UNIT"] = "docker.service"
			rec["_SYSTEMD_CGROUP"] = "/system.slice/docker.service"
			rec["_COMM"], rec["_EXE"], rec["_PID"] = "dockerd", "/usr/bin/dockerd", "1042"
			rec["CONTAINER_TAG"] = rec["CONTAINER_ID"]
			rec["SYSLOG_IDENTIFIER"] = rec["CONTAINER_ID"]
		}
		writeRec(t, w, rec)
	}
	if starts < 3 {
		t.Fatal("the fixture has fewer than three attempts")
	}
	return out
}

func writeRec(t *testing.T, w *os.File, rec map[string]any) {
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
}

// TestDockerJournaldDriver: docker's journald log driver writes the
// container's lines under docker.service. Each run (a new container id) is
// an attempt of the unit that ran it, found by the id `docker run` printed
// or, without it, by the container being named like the unit, with the
// unit's exit records and findings.
func TestDockerJournaldDriver(t *testing.T) {
	want := analyzeFile(t, filepath.Join("..", "examples", "dankserver-night-ladder.journal.json"))[:3]
	for _, runOutput := range []bool{true, false} {
		name := "by name"
		if runOutput {
			name = "by docker run output"
		}
		t.Run(name, func(t *testing.T) {
			got := analyzeFile(t, dockerDriverJournal(t, runOutput))
			if len(got) != 3 {
				var units []string
				for _, a := range got {
					units = append(units, a.Unit+"/"+string(a.Verdict))
				}
				t.Fatalf("%d attempts (%s), want 3", len(got), strings.Join(units, ", "))
			}
			for i := range want {
				g, w := summary(got[i], false), summary(want[i], false)
				if g != w || got[i].InvocationID != want[i].InvocationID || got[i].Container != "frank-primary-probe" || got[i].ContainerID == "" {
					t.Errorf("attempt %d:\n got %s (%s, container %s %.12s)\nwant %s", i, g, got[i].InvocationID, got[i].Container, got[i].ContainerID, w)
				}
			}
			if got[0].ContainerID == got[1].ContainerID {
				t.Error("two runs share a container id")
			}
		})
	}
}
