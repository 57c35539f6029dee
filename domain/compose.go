package domain

// SplitCompose splits docker compose's service column off a line of
// `docker compose logs` or `docker compose up` output: for
// "vllm-1  | INFO ..." it returns "vllm-1", "INFO ...", true. The column
// is a service name (a letter or digit, then letters, digits, '_', '.' or
// '-') at the very start of the line, one or more blanks (compose pads
// every name, so a bar right after a name is not a column), '|' and at
// most one space, which is dropped. ok is false, and rest the whole line,
// when the line has no such column.
func SplitCompose(line string) (service, rest string, ok bool) {
	if len(line) == 0 || !isAlnum(line[0]) {
		return "", line, false
	}
	i := 1
	for i < len(line) && (isAlnum(line[i]) || line[i] == '-' || line[i] == '_' || line[i] == '.') {
		i++
	}
	name := i
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	if i == name || i == len(line) || line[i] != '|' {
		return "", line, false
	}
	i++
	if i < len(line) && line[i] == ' ' {
		i++
	}
	return line[:name], line[i:], true
}

func isAlnum(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// SplitPodPrefix splits the column `kubectl logs --prefix` puts before
// every line, "[pod/NAME/CONTAINER] " (kubectl's logs command writes
// "[" + object kind/name/container + "] "): for "[pod/vllm-0/vllm] INFO ..."
// it returns "pod/vllm-0/vllm", "INFO ...", true. ok is false, and rest the
// whole line, when the line has no such column.
func SplitPodPrefix(line string) (pod, rest string, ok bool) {
	const head = "[pod/"
	if len(line) < len(head) || line[:len(head)] != head {
		return "", line, false
	}
	slashes := 1
	for i := len(head); i < len(line) && i < 320; i++ {
		switch c := line[i]; {
		case c == ']':
			if slashes != 2 || line[i-1] == '/' {
				return "", line, false
			}
			rest = line[i+1:]
			if len(rest) > 0 && rest[0] == ' ' {
				rest = rest[1:]
			}
			return line[1:i], rest, true
		case c == '/':
			slashes++
		case isAlnum(c) || c == '-' || c == '.' || c == '_':
		default:
			return "", line, false
		}
	}
	return "", line, false
}
