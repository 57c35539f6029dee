package catalog

import "strings"

// RustExtract lists panic!, error! and tracing::error! (fatal) and info!
// (readiness and milestones) macro calls of one Rust file. The tokens are
// read with the C scanner: Rust's comments and string literals follow the
// same rules for what is read here (raw strings r#"…"# are passed over).
func RustExtract(path string, src []byte) []Raw {
	if len(src) > MaxFileBytes {
		return nil
	}
	toks := cTokenize(src)
	var out []Raw
	fn := ""
	for i := 0; i+2 < len(toks); i++ {
		t := toks[i]
		if t.kind != 'n' {
			continue
		}
		if t.text == "fn" && toks[i+1].kind == 'n' {
			fn = toks[i+1].text
			continue
		}
		if toks[i+1].text != "!" || toks[i+2].text != "(" {
			continue
		}
		info := false
		switch t.text {
		case "panic", "error", "unreachable":
		case "info":
			info = true
		default:
			continue
		}
		// skip `target: "x",` and `field = value,` / `%field,` before the message
		j := i + 3
		depth := 0
		for ; j < len(toks) && j-i < 200; j++ {
			tt := toks[j]
			if tt.text == "(" || tt.text == "{" || tt.text == "[" {
				depth++
			}
			if tt.text == ")" || tt.text == "}" || tt.text == "]" {
				if depth == 0 {
					break
				}
				depth--
			}
			if tt.kind == 's' && depth == 0 {
				// the message is the first literal not followed by ":" or "=" context
				if j > 0 && (toks[j-1].text == ":" || toks[j-1].text == "=") {
					continue
				}
				break
			}
		}
		if j >= len(toks) || toks[j].kind != 's' {
			continue
		}
		f := toks[j].text
		out = append(out, Raw{File: path, Line: t.line, Func: fn, Call: t.text + "!", Format: f, Holes: strings.Contains(f, "{"), Lang: "rs", Info: info})
	}
	return out
}
