package rules

import (
	"errors"
	"testing"
	"testing/fstest"
)

// TestLoadErrorsNameTheFault: a broken regex of an engine's list item is
// reported on the item's line, not the engine's; a YAML type error is one
// error, and rules of other files that use the broken file's engine add
// none.
func TestLoadErrorsNameTheFault(t *testing.T) {
	for name, c := range map[string]struct {
		files map[string]string
		want  []string
	}{
		"detect item": {map[string]string{"x.yaml": `engines:
  - engine: myeng
    detect:
      - 'myeng started'
      - 'myeng (unclosed'
    banner: ['ok', 'bad (']
`}, []string{
			"x.yaml:5: detect: error parsing regexp: missing closing ): `myeng (unclosed`",
			"x.yaml:6: banner: error parsing regexp: missing closing ): `bad (`",
		}},
		"type error": {map[string]string{"a.yaml": `engines:
  - engine: myeng
    detect_priority: high
    detect: ['myeng started']
`, "b.yaml": `engines:
  - engine: child
    extends: myeng
    detect: ['child up']
rules:
  - id: myeng.boom
    title: boom
    engines: [myeng]
    match: 'boom'
    verdict: config_error
    severity: critical
    message_id: 0123456789abcdef0123456789abcdef
`}, []string{"a.yaml:3: yaml: unmarshal errors:\n  line 3: cannot unmarshal !!str `high` into int"}},
	} {
		t.Run(name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for n, body := range c.files {
				fsys[n] = &fstest.MapFile{Data: []byte(body)}
			}
			_, err := Load(fsys)
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("Load: %v, want Errors", err)
			}
			if len(es) != len(c.want) {
				t.Fatalf("%d errors, want %d:\n%v", len(es), len(c.want), err)
			}
			for i, e := range es {
				if e.Error() != c.want[i] {
					t.Errorf("error %d:\n%s\nwant\n%s", i, e.Error(), c.want[i])
				}
			}
		})
	}
}
