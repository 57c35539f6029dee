package rules

import (
	"bytes"
	"io/fs"
	"os"
	"reflect"
	"testing"
	"testing/fstest"
)

// TestGeneratedFilesAreCurrent: each file go generate ./rules writes
// (builtin_parsed.go, builtin_trees.go) is what it writes for the rule
// files as they are, with this Go release's regexp/syntax. When it fails,
// run go generate ./rules.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	if len(GeneratedFiles) != 3 {
		t.Fatalf("%d generated files", len(GeneratedFiles))
	}
	for _, g := range GeneratedFiles {
		want, err := g.Source(Builtin)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(g.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./rules", g.Name)
		}
	}
}

// TestPreparsedEqualsYAML: the Go data of builtin_parsed.go is what parsing
// the YAML gives, unexported line numbers and nil-or-empty slices and maps
// included, and LoadBuiltin takes it.
func TestPreparsedEqualsYAML(t *testing.T) {
	files, names, errs := readDir(Builtin)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if preparsed == nil {
		t.Fatal("no builtin_parsed.go")
	}
	if !reflect.DeepEqual(names, preparsed.names) {
		t.Fatalf("names %q, YAML %q", preparsed.names, names)
	}
	if len(files) != len(preparsed.files) {
		t.Fatalf("%d files, YAML %d", len(preparsed.files), len(files))
	}
	for i := range files {
		if !reflect.DeepEqual(files[i], preparsed.files[i]) {
			t.Errorf("%s differs from its YAML", names[i])
		}
	}
	got, _, _, parsed := builtinFiles()
	if len(got) == 0 || &got[0] != &preparsed.files[0] || !parsed {
		t.Error("LoadBuiltin parses the YAML although builtin_parsed.go is current")
	}
}

// TestPreparsedStaleFallsBack: files that differ from those the parsed form
// was made from, by one byte, are parsed again.
func TestPreparsedStaleFallsBack(t *testing.T) {
	changed := fstest.MapFS{}
	err := fs.WalkDir(Builtin, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(Builtin, p)
		if p == "vllm.yaml" {
			data = bytes.Replace(data, []byte("id: vllm."), []byte("id: vllx."), 1)
		}
		changed[p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	files, _, errs, parsed := parsedOrRead(changed, preparsed)
	if len(errs) > 0 || parsed {
		t.Fatal(errs, parsed)
	}
	if reflect.DeepEqual(files, preparsed.files) {
		t.Fatal("a changed file was taken from the stale parsed form")
	}
	same, _, _, _ := parsedOrRead(fstest.MapFS(changed), nil)
	if !reflect.DeepEqual(files, same) {
		t.Error("the fallback is not readDir")
	}
}
