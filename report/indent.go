package report

// appendIndent appends to dst the compact JSON src laid out as
// encoding/json.Indent(dst, src, prefix, indent) lays it out: a newline,
// prefix and one indent per depth before each element and closing
// bracket, ": " after a key, and empty objects and arrays as {} and [].
// src must be what encoding/json's Marshal writes (valid, no white space
// outside strings). json.Indent reads its input again through the full
// JSON decoder: on a dense journal that second pass was half of
// encoding explain's JSON (pprof), this one a byte loop.
func appendIndent(dst, src []byte, prefix, indent string) []byte {
	depth := 0
	open := false // after '{' or '[': the newline waits for a non-empty body
	for i := 0; i < len(src); i++ {
		c := src[i]
		if open && c != '}' && c != ']' {
			open = false
			depth++
			dst = appendNewline(dst, prefix, indent, depth)
		}
		switch c {
		case '"':
			j := stringEnd(src, i)
			dst = append(dst, src[i:j]...)
			i = j - 1
		case '{', '[':
			open = true
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			dst = appendNewline(dst, prefix, indent, depth)
		case ':':
			dst = append(dst, c, ' ')
		case '}', ']':
			if open {
				open = false
			} else {
				depth--
				dst = appendNewline(dst, prefix, indent, depth)
			}
			dst = append(dst, c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// stringEnd returns the index after the JSON string starting at src[i]
// ('"'), or len(src) when it does not end.
func stringEnd(src []byte, i int) int {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(src)
}

func appendNewline(dst []byte, prefix, indent string, depth int) []byte {
	dst = append(dst, '\n')
	dst = append(dst, prefix...)
	for range depth {
		dst = append(dst, indent...)
	}
	return dst
}
