package journald

import (
	"os"
	"path/filepath"
	"strings"
)

// LocalDirs are where journald keeps the local journal: persistent, then
// volatile.
var LocalDirs = []string{"/var/log/journal", "/run/log/journal"}

// FilesReadable counts the journal files in the machine directories
// under dirs (a machine directory this process may not list counts as
// one), and how many of them it can open: journalctl opens none it may not
// read, and then follows nothing without an error.
func FilesReadable(dirs []string) (files, readable int) {
	for _, d := range dirs {
		subs, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, sub := range subs {
			if !sub.IsDir() {
				continue
			}
			names, err := os.ReadDir(filepath.Join(d, sub.Name()))
			if err != nil {
				files++ // unreadable machine directory (2750 root:systemd-journal)
				continue
			}
			for _, n := range names {
				if !strings.HasSuffix(n.Name(), ".journal") {
					continue
				}
				files++
				if f, err := os.Open(filepath.Join(d, sub.Name(), n.Name())); err == nil {
					f.Close()
					readable++
				}
			}
		}
	}
	return files, readable
}
