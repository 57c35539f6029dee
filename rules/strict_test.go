package rules

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"
)

// decodeBoth decodes data with yaml.v3's strict decoder and, when
// onlyKnownFields lets it, from the parsed node; fast is false when the
// node path was not taken.
func decodeBoth(data []byte) (strict, fromNode File, strictErr, nodeErr error, fast bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	strictErr = dec.Decode(&strict)
	var root yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&root); err != nil {
		return strict, fromNode, strictErr, nil, false
	}
	if !onlyKnownFields(&root, reflect.TypeFor[File]()) {
		return strict, fromNode, strictErr, nil, false
	}
	return strict, fromNode, strictErr, root.Decode(&fromNode), true
}

// TestOnlyKnownFields: every built-in rule file decodes from its node (the
// point of it), and a key the strict decoder rejects, at any depth, sends
// the file to the strict decoder.
func TestOnlyKnownFields(t *testing.T) {
	names, err := fs.Glob(Builtin, "*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatal(names, err)
	}
	for _, name := range names {
		data, _ := fs.ReadFile(Builtin, name)
		strict, fromNode, strictErr, nodeErr, fast := decodeBoth(data)
		if !fast {
			t.Errorf("%s: decoded strictly, want from the node", name)
			continue
		}
		if strictErr != nil || nodeErr != nil || !reflect.DeepEqual(strict, fromNode) {
			t.Errorf("%s: the node decode differs (errors %v, %v)", name, strictErr, nodeErr)
		}
	}
	for _, doc := range []string{
		"bogus: 1\n",
		"engines:\n  - engine: e\n    bogus: 1\n",
		"engines:\n  - engine: e\n    phases:\n      - {phase: init, match: x, bogus: 1}\n",
		"rules:\n  - id: a\n    count: {gte: 2, bogus: 1}\n",
		"rules:\n  - id: a\n    tests:\n      - name: t\n        bogus: 1\n",
		"x: &a {engine: e, bogus: 1}\nengines: [*a]\n",
		"base: &b {id: a}\nrules:\n  - <<: *b\n    title: t\n",
	} {
		_, _, strictErr, _, fast := decodeBoth([]byte(doc))
		if fast {
			t.Errorf("%q: decoded from the node; the strict decoder says %v", doc, strictErr)
		}
	}
}

// FuzzOnlyKnownFields: where parseFile decodes from the node, the result
// and the error are the strict decoder's.
func FuzzOnlyKnownFields(f *testing.F) {
	names, _ := fs.Glob(Builtin, "*.yaml")
	for _, name := range names {
		data, _ := fs.ReadFile(Builtin, name)
		f.Add(data)
	}
	bad, _ := filepath.Glob("testdata/*.yaml")
	for _, name := range bad {
		data, err := os.ReadFile(name)
		if err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("engines:\n  - engine: e\n    defaults: {a: {b: c}}\n    detect: [{match: x, weight: 2}]\nrules:\n  - {id: a, count: ~, tests: [{lines: [x, {msg: y}]}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		strict, fromNode, strictErr, nodeErr, fast := decodeBoth(data)
		if !fast {
			return
		}
		if (strictErr == nil) != (nodeErr == nil) || strictErr != nil && strictErr.Error() != nodeErr.Error() {
			t.Fatalf("errors differ: strict %v, from the node %v", strictErr, nodeErr)
		}
		if strictErr == nil && !reflect.DeepEqual(strict, fromNode) {
			t.Fatalf("decoded files differ:\n%+v\n%+v", strict, fromNode)
		}
	})
}
