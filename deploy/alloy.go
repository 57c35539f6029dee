package deploy

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// An Alloy configuration file (the syntax once called River) is a body of
// attributes (name = value) and blocks (name "label" { body }). This is a
// small reader of that syntax, enough to check the shipped config and to
// model what its journal pipeline sends; it is not Alloy's own parser.

// Block is a block of an Alloy configuration.
type Block struct {
	Name  string // e.g. "loki.source.journal", "rule", "stage.structured_metadata"
	Label string // the quoted label of a component, "" for an inner block
	Line  int
	Attrs map[string]Value
	// Order lists the attribute names in file order.
	Order  []string
	Blocks []*Block
}

// Value is an attribute's value: a string, number, bool, list, object, or a
// reference/call kept as its source text (e.g. sys.env("X"),
// loki.write.loki.receiver).
type Value struct {
	Kind   string // "string", "number", "bool", "list", "object", "expr"
	Str    string // string value, or the source of an expr/number/bool
	List   []Value
	Object map[string]Value
	Keys   []string // object keys in order
}

// Find returns the blocks named name (any label) among b's direct blocks.
func (b *Block) Find(name string) []*Block {
	var out []*Block
	for _, c := range b.Blocks {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// Component returns the top-level block name "label", or nil.
func (b *Block) Component(name, label string) *Block {
	for _, c := range b.Blocks {
		if c.Name == name && c.Label == label {
			return c
		}
	}
	return nil
}

// ParseAlloy reads an Alloy configuration into its root body.
func ParseAlloy(src string) (*Block, error) {
	toks, err := lexAlloy(src)
	if err != nil {
		return nil, err
	}
	p := &alloyParser{toks: toks}
	root := &Block{Attrs: map[string]Value{}}
	if err := p.body(root, true); err != nil {
		return nil, err
	}
	return root, nil
}

type token struct {
	kind string // "ident", "string", "number", "punct", "nl", "eof"
	text string
	line int
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*`)
var numberRE = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?`)

func lexAlloy(src string) ([]token, error) {
	var toks []token
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			toks = append(toks, token{"nl", "\n", line})
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated comment", line)
			}
			line += strings.Count(src[i:i+2+end], "\n")
			i += end + 4
		case c == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				if j < len(src) && src[j] == '\n' {
					return nil, fmt.Errorf("line %d: newline in string", line)
				}
				j++
			}
			if j >= len(src) {
				return nil, fmt.Errorf("line %d: unterminated string", line)
			}
			s, err := strconv.Unquote(src[i : j+1])
			if err != nil {
				return nil, fmt.Errorf("line %d: bad string %s: %v", line, src[i:j+1], err)
			}
			toks = append(toks, token{"string", s, line})
			i = j + 1
		case strings.ContainsRune("{}[]()=,", rune(c)):
			toks = append(toks, token{"punct", string(c), line})
			i++
		default:
			if m := numberRE.FindString(src[i:]); m != "" {
				toks = append(toks, token{"number", m, line})
				i += len(m)
				continue
			}
			if m := identRE.FindString(src[i:]); m != "" {
				toks = append(toks, token{"ident", m, line})
				i += len(m)
				continue
			}
			return nil, fmt.Errorf("line %d: unexpected %q", line, c)
		}
	}
	return append(toks, token{"eof", "", line}), nil
}

type alloyParser struct {
	toks []token
	i    int
}

func (p *alloyParser) peek() token { return p.toks[p.i] }
func (p *alloyParser) next() token {
	t := p.toks[p.i]
	if t.kind != "eof" {
		p.i++
	}
	return t
}

func (p *alloyParser) skipNL() {
	for p.peek().kind == "nl" {
		p.i++
	}
}

func (p *alloyParser) is(kind, text string) bool {
	t := p.peek()
	return t.kind == kind && t.text == text
}

// body reads attributes and blocks until '}' (or EOF at the top level).
func (p *alloyParser) body(b *Block, top bool) error {
	for {
		p.skipNL()
		t := p.peek()
		if t.kind == "eof" {
			if top {
				return nil
			}
			return fmt.Errorf("line %d: block %s not closed", b.Line, b.Name)
		}
		if p.is("punct", "}") {
			if top {
				return fmt.Errorf("line %d: unexpected '}'", t.line)
			}
			p.next()
			return nil
		}
		if t.kind != "ident" {
			return fmt.Errorf("line %d: want an attribute or block name, got %q", t.line, t.text)
		}
		p.next()
		switch {
		case p.is("punct", "="):
			p.next()
			v, err := p.value()
			if err != nil {
				return err
			}
			if _, dup := b.Attrs[t.text]; dup {
				return fmt.Errorf("line %d: attribute %s set twice", t.line, t.text)
			}
			b.Attrs[t.text] = v
			b.Order = append(b.Order, t.text)
			if nt := p.peek(); nt.kind != "nl" && nt.kind != "eof" && !p.is("punct", "}") {
				return fmt.Errorf("line %d: want a new line after attribute %s", nt.line, t.text)
			}
		default:
			child := &Block{Name: t.text, Line: t.line, Attrs: map[string]Value{}}
			if p.peek().kind == "string" {
				child.Label = p.next().text
			}
			if !p.is("punct", "{") {
				return fmt.Errorf("line %d: want '=' or '{' after %s", t.line, t.text)
			}
			p.next()
			if err := p.body(child, false); err != nil {
				return err
			}
			b.Blocks = append(b.Blocks, child)
		}
	}
}

// value reads one expression value.
func (p *alloyParser) value() (Value, error) {
	t := p.next()
	switch t.kind {
	case "string":
		return Value{Kind: "string", Str: t.text}, nil
	case "number":
		return Value{Kind: "number", Str: t.text}, nil
	case "ident":
		if t.text == "true" || t.text == "false" {
			return Value{Kind: "bool", Str: t.text}, nil
		}
		if t.text == "null" {
			return Value{Kind: "expr", Str: "null"}, nil
		}
		src := t.text
		if p.is("punct", "(") { // a call: keep its source
			depth := 0
			for {
				tt := p.next()
				if tt.kind == "eof" {
					return Value{}, fmt.Errorf("line %d: unclosed call %s(", t.line, t.text)
				}
				switch {
				case tt.kind == "punct" && tt.text == "(":
					depth++
				case tt.kind == "punct" && tt.text == ")":
					depth--
				}
				if tt.kind == "string" {
					src += strconv.Quote(tt.text)
				} else if tt.kind != "nl" {
					src += tt.text
				}
				if depth == 0 {
					break
				}
			}
		}
		return Value{Kind: "expr", Str: src}, nil
	case "punct":
		switch t.text {
		case "[":
			v := Value{Kind: "list"}
			for {
				p.skipNL()
				if p.is("punct", "]") {
					p.next()
					return v, nil
				}
				e, err := p.value()
				if err != nil {
					return Value{}, err
				}
				v.List = append(v.List, e)
				p.skipNL()
				if p.is("punct", ",") {
					p.next()
				} else if !p.is("punct", "]") {
					return Value{}, fmt.Errorf("line %d: want ',' or ']' in a list", p.peek().line)
				}
			}
		case "{":
			v := Value{Kind: "object", Object: map[string]Value{}}
			for {
				p.skipNL()
				if p.is("punct", "}") {
					p.next()
					return v, nil
				}
				k := p.next()
				if k.kind != "ident" && k.kind != "string" {
					return Value{}, fmt.Errorf("line %d: want an object key, got %q", k.line, k.text)
				}
				if !p.is("punct", "=") {
					return Value{}, fmt.Errorf("line %d: want '=' after key %s", k.line, k.text)
				}
				p.next()
				e, err := p.value()
				if err != nil {
					return Value{}, err
				}
				if _, dup := v.Object[k.text]; dup {
					return Value{}, fmt.Errorf("line %d: key %s twice", k.line, k.text)
				}
				v.Object[k.text] = e
				v.Keys = append(v.Keys, k.text)
				p.skipNL()
				if p.is("punct", ",") {
					p.next()
				} else if !p.is("punct", "}") {
					return Value{}, fmt.Errorf("line %d: want ',' or '}' in an object", p.peek().line)
				}
			}
		}
	}
	return Value{}, fmt.Errorf("line %d: unexpected %q in a value", t.line, t.text)
}
