// Command enginecatalog lists the readiness, milestone and fatal statements of
// an inference engine's source tree (a bare git directory, read with git
// ls-tree and cat-file), and prints a catalog's coverage.
//
//	enginecatalog extract --engine NAME --version V [--rev REV] [--under DIR[,DIR...]] SRC_GIT_DIR > catalog/data/NAME-V.tsv
//	enginecatalog table catalog/data/*.tsv
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"

	"github.com/llmfleet/analyzer/catalog"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "extract":
		err = extract(os.Args[2:])
	case "table":
		err = table(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "enginecatalog:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: enginecatalog extract --engine NAME --version V [--rev REV] [--under DIR[,DIR...]] SRC_GIT_DIR\n       enginecatalog table CATALOG.tsv...")
	os.Exit(2)
}

// skipPath: tests, examples, benchmarks and vendored third-party code print
// nothing an engine's boot prints.
func skipPath(p string) bool {
	lp := strings.ToLower(p)
	for _, s := range []string{"test", "benchmark", "third_party", "vendor/", "docs/", "scripts/", ".github/", "/bench", "integration/", "convert", "gguf-py/"} {
		if strings.Contains(lp, s) {
			return true
		}
	}
	// the servers live under examples/ (ik_llama.cpp) and tools/ (llama.cpp): only those are read there
	if (strings.HasPrefix(lp, "examples/") || strings.HasPrefix(lp, "tools/")) && !strings.Contains(lp, "server") {
		return true
	}
	return false
}

func extract(args []string) error {
	fs := flag.NewFlagSet("extract", flag.ExitOnError)
	engine := fs.String("engine", "", "engine profile (vllm, sglang, llamacpp, ollama, tgi, lmdeploy, trtllm, exllama, gufo, halogen)")
	version := fs.String("version", "", "engine version or fork, written into the catalog")
	rev := fs.String("rev", "HEAD", "git revision to read")
	under := fs.String("under", "", "read only this folder of the tree (its prefix is cut from paths); several folders separated by commas")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		usage()
	}
	prof, ok := catalog.Profiles[*engine]
	if !ok {
		return fmt.Errorf("unknown engine %q", *engine)
	}
	dir := fs.Arg(0)
	lsArgs := []string{"-C", dir, "ls-tree", "-r", "-z", "--full-tree", *rev}
	// A fork may keep its serving code in several folders (a patched
	// vLLM and its plugin side by side under vendor/): each folder's prefix
	// is cut from its own paths, so they read as the upstream package does.
	var unders []string
	for _, u := range strings.Split(*under, ",") {
		if u = strings.Trim(strings.TrimSpace(u), "/"); u != "" {
			unders = append(unders, u)
		}
	}
	if len(unders) > 0 {
		lsArgs = append(lsArgs, "--")
		lsArgs = append(lsArgs, unders...)
	}
	ls := exec.Command("git", lsArgs...)
	out, err := ls.Output()
	if err != nil {
		return fmt.Errorf("git ls-tree: %w", err)
	}
	type obj struct{ sha, path string }
	var objs []obj
	for _, rec := range bytes.Split(out, []byte{0}) {
		// "<mode> blob <sha>\t<path>"
		tab := bytes.IndexByte(rec, '\t')
		if tab < 0 {
			continue
		}
		f := strings.Fields(string(rec[:tab]))
		p := string(rec[tab+1:])
		if len(f) != 3 || f[1] != "blob" {
			continue
		}
		rel := p
		for _, u := range unders {
			if strings.HasPrefix(p, u+"/") {
				rel = strings.TrimPrefix(p, u+"/")
				break
			}
		}
		if skipPath(rel) {
			continue
		}
		switch {
		case strings.HasSuffix(p, ".py"), strings.HasSuffix(p, ".go"), strings.HasSuffix(p, ".rs"),
			strings.HasSuffix(p, ".c"), strings.HasSuffix(p, ".cpp"), strings.HasSuffix(p, ".cc"),
			strings.HasSuffix(p, ".h"), strings.HasSuffix(p, ".hpp"), strings.HasSuffix(p, ".cu"):
			objs = append(objs, obj{f[2], rel})
		case prof.Scripts && strings.HasSuffix(p, ".sh"):
			objs = append(objs, obj{f[2], rel})
		}
	}
	cat := exec.Command("git", "-C", dir, "cat-file", "--batch")
	in, _ := cat.StdinPipe()
	stdout, _ := cat.StdoutPipe()
	if err := cat.Start(); err != nil {
		return err
	}
	go func() {
		w := bufio.NewWriter(in)
		for _, o := range objs {
			fmt.Fprintln(w, o.sha)
		}
		w.Flush()
		in.Close()
	}()
	r := bufio.NewReaderSize(stdout, 1<<20)
	var st []catalog.Statement
	for _, o := range objs {
		hdr, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("git cat-file: %w", err)
		}
		f := strings.Fields(hdr)
		if len(f) == 2 && f[1] == "missing" {
			continue // the snapshot lacks its largest files
		}
		if len(f) != 3 {
			return fmt.Errorf("git cat-file: %q", hdr)
		}
		n, _ := strconv.Atoi(f[2])
		buf := make([]byte, n+1) // body and its newline
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		if n > catalog.MaxFileBytes {
			continue
		}
		st = append(st, catalog.Extract(prof, o.path, buf[:n])...)
	}
	if err := cat.Wait(); err != nil {
		return err
	}
	for _, e := range prof.External {
		e.Engine = prof.Engine
		e.Phase = "ready"
		st = append(st, e)
	}
	for i := range st {
		st[i].Version = *version
	}
	catalog.Sort(st)
	return catalog.WriteTSV(os.Stdout, st)
}

func table(files []string) error {
	fmt.Printf("%-28s %7s %7s %7s %7s %7s\n", "catalog", "fatal", "request", "marker", "ready", "total")
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return err
		}
		st, err := catalog.ReadTSV(fh)
		fh.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		n := map[catalog.Kind]int{}
		fam := map[string]int{}
		for _, s := range st {
			n[s.Kind]++
			if s.Kind == catalog.KindFatal {
				fam[string(s.Family)+"@"+string(s.Phase)]++
			}
		}
		fmt.Printf("%-28s %7d %7d %7d %7d %7d\n", f[strings.LastIndex(f, "/")+1:], n[catalog.KindFatal], n[catalog.KindRequest], n[catalog.KindMarker], n[catalog.KindReady], len(st))
		keys := make([]string, 0, len(fam))
		for k := range fam {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return fam[keys[i]] > fam[keys[j]] })
		for _, k := range keys {
			fmt.Printf("    %-40s %5d\n", k, fam[k])
		}
	}
	return nil
}
