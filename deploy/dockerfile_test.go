package deploy_test

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDockerfile: no Docker engine runs here, so the image is not built;
// what can be checked is: two stages, a numeric non-root user in the last,
// and the ENTRYPOINT's command line run for real: the analyzer starts with
// exactly those flags (the database under a temporary directory), answers
// /metrics, and refuses a push without the token a non-loopback listener
// requires.
func TestDockerfile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the analyzer")
	}
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if n := len(regexp.MustCompile(`(?m)^FROM `).FindAllString(text, -1)); n != 2 {
		t.Errorf("%d stages, want 2 (build, run)", n)
	}
	users := regexp.MustCompile(`(?m)^USER (\d+):(\d+)$`).FindAllStringSubmatch(text, -1)
	if len(users) != 1 || users[0][1] == "0" || strings.Index(text, users[0][0]) < strings.LastIndex(text, "\nFROM ") {
		t.Errorf("want one numeric non-root USER in the last stage, got %v", users)
	}
	m := regexp.MustCompile(`(?m)^ENTRYPOINT (\[.*\])$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("no ENTRYPOINT in exec form")
	}
	var argv []string
	if err := json.Unmarshal([]byte(m[1]), &argv); err != nil || len(argv) < 2 || argv[0] != "/usr/bin/analyzer" || argv[1] != "serve" {
		t.Fatalf("ENTRYPOINT %s: %v", m[1], err)
	}
	for _, want := range []string{"--no-journal", "--no-notes"} {
		if !strings.Contains(m[1], `"`+want+`"`) {
			t.Errorf("the container must run %s (no host journal inside it)", want)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	args := append([]string(nil), argv[1:]...)
	for i, a := range args {
		switch {
		case a == "0.0.0.0:8080":
			args[i] = "0.0.0.0:" + strconv.Itoa(port)
		case strings.HasPrefix(a, "/var/lib/analyzer/"):
			args[i] = filepath.Join(dir, filepath.Base(a))
		}
	}
	cmd := exec.Command(stampedBinary(t), args...)
	cmd.Env = append(os.Environ(), "ANALYZER_PUSH_TOKEN=container-test-token")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/metrics")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("/metrics: %s", resp.Status)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ENTRYPOINT's analyzer never answered: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	resp, err := http.Post(base+"/loki/api/v1/push", "application/json", strings.NewReader(`{"streams":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("push without the token: %s, want 401", resp.Status)
	}
}
