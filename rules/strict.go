package rules

import (
	"reflect"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// Every command loads the built-in rule files, and parseFile read each
// twice: once into a yaml.Node for the line numbers and once more, with
// KnownFields, into the structs, because yaml.v3 has no strict decode of a
// Node it already has. onlyKnownFields lets it decode the Node instead when
// that cannot differ: it looks for a key the strict decoder would reject,
// and for what it does not model (merge keys, deep aliases), and parseFile
// runs the strict decoder only then, so errors keep their exact wording.

// maxKnownDepth bounds onlyKnownFields' recursion (aliases can nest).
const maxKnownDepth = 64

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// onlyKnownFields reports whether decoding n into a value of type t can
// meet no mapping key that yaml.v3's KnownFields decoder rejects ("field X
// not found in type T"). false means: maybe one; decode strictly.
//
// It follows yaml.v3's decoder (decode.go, getStructInfo in yaml.go): a
// struct's keys are its exported fields' yaml tag names (the lowercased
// field name without one; "-" none); pointers, slices, arrays and map
// values are followed; a type with its own UnmarshalYAML decodes its node
// itself, without KnownFields, so it is not looked into, nor is an
// interface.
func onlyKnownFields(n *yaml.Node, t reflect.Type) bool {
	return knownIn(n, t, 0)
}

func knownIn(n *yaml.Node, t reflect.Type, depth int) bool {
	if depth > maxKnownDepth {
		return false
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return false
		}
		n = n.Alias
	}
	if n.Kind == yaml.DocumentNode {
		return len(n.Content) == 0 || len(n.Content) == 1 && knownIn(n.Content[0], t, depth+1)
	}
	if n.Kind == yaml.ScalarNode {
		return true // no keys below a scalar (a mismatch is a type error, not strictness)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// The decoder allocates through pointers and then asks the address of
	// the value (a *T, whose method set holds T's) for UnmarshalYAML.
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return true
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return true
		}
		fields, ok := structKeys(t)
		if !ok {
			return false
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if !plainKey(k) {
				return false
			}
			ft, known := fields[k.Value]
			if !known || !knownIn(v, ft, depth+1) {
				return false
			}
		}
		return true
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return true
		}
		for _, c := range n.Content {
			if !knownIn(c, t.Elem(), depth+1) {
				return false
			}
		}
		return true
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return true
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !plainKey(n.Content[i]) {
				return false
			}
			if !knownIn(n.Content[i+1], t.Elem(), depth+1) {
				return false
			}
		}
		return true
	}
	return true // an interface or a scalar type: any key below is the value's own
}

// plainKey reports whether k is a string key the decoder reads as its
// text: not a merge key (<<), a null, a binary or a collection.
func plainKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.ShortTag() == "!!str" && k.Value != "<<"
}

// structKeys is yamlFields, computed once per type (a rule file has a
// mapping per rule).
func structKeys(t reflect.Type) (map[string]reflect.Type, bool) {
	if v, ok := keysByType.Load(t); ok {
		k := v.(structKeySet)
		return k.fields, k.ok
	}
	fields, ok := yamlFields(t)
	keysByType.Store(t, structKeySet{fields, ok})
	return fields, ok
}

type structKeySet struct {
	fields map[string]reflect.Type
	ok     bool
}

var keysByType sync.Map // reflect.Type → structKeySet

// yamlFields maps each key a struct of type t accepts to its field's type,
// as yaml.v3's getStructInfo names them; ok is false for what it does not
// model (",inline" fields: no rule file type has one).
func yamlFields(t reflect.Type) (map[string]reflect.Type, bool) {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.PkgPath != "" && !f.Anonymous {
			continue // unexported
		}
		tag := f.Tag.Get("yaml")
		if tag == "" && !strings.Contains(string(f.Tag), ":") {
			tag = string(f.Tag)
		}
		if tag == "-" {
			continue
		}
		name, flags, _ := strings.Cut(tag, ",")
		if strings.Contains(","+flags+",", ",inline,") {
			return nil, false
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out, true
}
