package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestDebPackage builds the package with scripts/deb.sh (as `make deb`
// does) from a binary stamped with a version, unpacks it with dpkg-deb and
// checks what an install would put in place: the binary answering
// --version with that stamp, a unit that systemd-analyze verifies against
// it, the catalog, the settings file as a conffile, and the examples.
func TestDebPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and a package")
	}
	for _, tool := range []string{"dpkg-deb", "dpkg", "systemd-analyze"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	dir := t.TempDir()
	bin := stampedBinary(t)
	deb := filepath.Join(dir, "analyzer.deb")
	mk := exec.Command("scripts/deb.sh", bin, "1.2.3-test", deb)
	mk.Dir = ".."
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("deb.sh: %v\n%s", err, out)
	}
	field := func(name string) string {
		out, err := exec.Command("dpkg-deb", "--field", deb, name).Output()
		if err != nil {
			t.Fatalf("dpkg-deb --field %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	if p, v := field("Package"), field("Version"); p != "llmfleet-analyzer" || v != "1.2.3-test" {
		t.Errorf("package %q version %q", p, v)
	}
	root := filepath.Join(dir, "root")
	if out, err := exec.Command("dpkg-deb", "--extract", deb, root).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb --extract: %v\n%s", err, out)
	}
	ctl := filepath.Join(dir, "control")
	if out, err := exec.Command("dpkg-deb", "--control", deb, ctl).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb --control: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ctl, "conffiles")); strings.TrimSpace(string(b)) != "/etc/default/analyzer" {
		t.Errorf("conffiles %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ctl, "postinst")); !strings.Contains(string(b), "journalctl --update-catalog") {
		t.Errorf("postinst does not update the journal's catalog:\n%s", b)
	}
	for _, f := range []string{
		"usr/bin/analyzer", "lib/systemd/system/analyzer.service", "usr/lib/systemd/catalog/analyzer.catalog", "etc/default/analyzer",
		"usr/share/doc/llmfleet-analyzer/examples/alloy/config.alloy", "usr/share/doc/llmfleet-analyzer/examples/prometheus/rules.yaml",
		"usr/share/doc/llmfleet-analyzer/examples/grafana/dashboards/analyzer.json", "usr/share/doc/llmfleet-analyzer/copyright",
	} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("package lacks /%s", f)
		}
	}
	out, err := exec.Command(filepath.Join(root, "usr/bin/analyzer"), "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "1.2.3-test") {
		t.Errorf("--version: %v %q", err, out)
	}
	unit, err := os.ReadFile(filepath.Join(root, "lib/systemd/system/analyzer.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "ExecStart=/usr/bin/analyzer serve") {
		t.Fatalf("the packaged unit does not start /usr/bin/analyzer")
	}
	// verify needs the binary where ExecStart names it: point it into the
	// unpacked tree.
	probe := filepath.Join(dir, "analyzer.service")
	if err := os.WriteFile(probe, []byte(strings.ReplaceAll(string(unit), "/usr/bin/analyzer", filepath.Join(root, "usr/bin/analyzer"))), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("systemd-analyze", "verify", probe).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

var stamped struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// stampedBinary builds the analyzer once per test run, stamped 1.2.3-test.
func stampedBinary(t *testing.T) string {
	t.Helper()
	stamped.once.Do(func() {
		dir, err := os.MkdirTemp("", "analyzer-deploy-bin")
		if err != nil {
			stamped.err = err
			return
		}
		stamped.path = filepath.Join(dir, "analyzer")
		build := exec.Command("go", "build", "-tags", "nomsgpack", "-ldflags", "-X main.buildVersion=1.2.3-test", "-o", stamped.path, "./cmd/analyzer")
		build.Dir = ".."
		stamped.out, stamped.err = build.CombinedOutput()
	})
	if stamped.err != nil {
		t.Fatalf("go build: %v\n%s", stamped.err, stamped.out)
	}
	return stamped.path
}

// TestMain removes the stamped binary's directory after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if stamped.path != "" {
		_ = os.RemoveAll(filepath.Dir(stamped.path))
	}
	os.Exit(code)
}
