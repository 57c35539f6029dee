package judge

// An argument parser's usage or help text is not the engine speaking: its
// option descriptions name phases ("skip warming up the model with an empty
// run"), errors ("abort on OOM") and readiness ("wait until the server is
// ready") without any of them happening. The judge reads such a block as
// one fact — the engine printed its usage, which it does when it rejects
// its command line — and runs no phase markers, shape patterns or rules on
// the lines inside it.
//
// The block's grammar is the one the engines' parsers print (Python's
// argparse for vLLM, SGLang, LMDeploy and TGI's launcher; common/arg.cpp and
// the older gpt_params_print_usage for llama.cpp and ik_llama.cpp; Go's flag
// and cobra for Ollama):
//
//	usage: vllm serve [-h] [--model MODEL] ...      a usage head
//	                  [--tokenizer TOKENIZER] ...     wrapped: indented
//	options:                                        a group header
//	  -h, --help            show this help ...      an option line
//	  --max-model-len MAX_MODEL_LEN                 an option alone
//	                        Model context length.   its help: indented
//	----- common params -----                       a llama.cpp section
//	-t,    --threads N      number of threads       (unindented options)
//	                        (env: LLAMA_ARG_THREADS)
//
// A block starts at a usage head, a section header or an option line with
// its help beside it; inside it, option lines, group headers, blank lines
// and indented lines continue it; any other line ends it (argparse's
// "prog: error: ..." that follows is judged as usual).

// usageText tracks whether the lines are inside a usage block.
type usageText struct {
	in    bool
	lines int // lines of the current block
}

// step reads one line (prefixes stripped) and reports whether it belongs
// to a usage block, and whether it is the block's first line.
func (u *usageText) step(text string) (inside, first bool) {
	if u.in {
		if usageContinues(text) {
			u.lines++
			return true, false
		}
		u.in, u.lines = false, 0
	}
	if usageStarts(text) {
		u.in, u.lines = true, 1
		return true, true
	}
	return false, false
}

// usageStarts reports whether text opens a usage block: "usage: ..." (any
// case), a section header of option groups, or an option line with its help
// beside it.
func usageStarts(text string) bool {
	if len(text) == 0 {
		return false
	}
	switch c := text[0]; {
	case c == 'u' || c == 'U':
		return len(text) > 7 && (text[:7] == "usage: " || text[:7] == "Usage: " || text[:7] == "USAGE: ")
	case c == '-' && len(text) > 4 && text[:3] == "---":
		return sectionHeader(text)
	case c == '-' || c == ' ' || c == '\t':
		name, rest, ok := optionLine(text)
		return ok && name && helpBeside(rest)
	}
	return false
}

// usageContinues reports whether text goes on with a usage block already
// open.
func usageContinues(text string) bool {
	if len(text) == 0 {
		return true
	}
	switch c := text[0]; {
	case c == ' ' || c == '\t':
		return true // wrapped usage, an indented option or its help
	case c == '-':
		if len(text) > 4 && text[:3] == "---" {
			return sectionHeader(text)
		}
		_, _, ok := optionLine(text)
		return ok
	case c == '(':
		return len(text) > 6 && text[:6] == "(env: " // llama.cpp's env name under an option
	}
	return groupHeader(text)
}

// sectionHeader reports whether text is a llama.cpp section line such as
// "----- common params -----" or "----- sampling options -----" (not
// Python logging's "--- Logging error ---", which names no option group).
func sectionHeader(text string) bool {
	i := 0
	for i < len(text) && text[i] == '-' {
		i++
	}
	j := len(text)
	for j > i && text[j-1] == '-' {
		j--
	}
	if i < 3 || len(text)-j < 3 || j-i < 3 {
		return false
	}
	for _, w := range []string{"params", "options", "parameters", "arguments", "flags"} {
		if containsWord(text[i:j], w) {
			return true
		}
	}
	return false
}

// groupHeader reports whether text is an argparse or cobra group title:
// "options:", "positional arguments:", "ModelConfig:", "Flags:" — a few
// words ending the line with a colon.
func groupHeader(text string) bool {
	if len(text) < 2 || len(text) > 64 || text[len(text)-1] != ':' {
		return false
	}
	for i := 0; i < len(text)-1; i++ {
		c := text[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ' ' || c == '-' || c == '_') {
			return false
		}
	}
	return text[0] != ' '
}

// optionLine parses an option listing: optional indentation, then one or
// more comma-separated options ("-h, --help", "-m,    --model FNAME",
// "--no-warmup") with their metavariables. It returns whether an option
// name was read and the text after the options and metavariables.
func optionLine(text string) (named bool, rest string, ok bool) {
	i := 0
	for i < len(text) && i <= 12 && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	if i >= len(text) || text[i] != '-' {
		return false, "", false
	}
	// Options: -x or --long-name, separated by "," and spaces; then
	// metavariables up to the first run of two spaces.
	for i < len(text) && text[i] == '-' {
		k := optionName(text, i)
		if k < 0 {
			return false, "", false
		}
		named = true
		var more bool
		if i, more = afterOption(text, k); !more {
			break
		}
	}
	return named, text[i:], true
}

// optionName returns where the option name at text[i] ("-x",
// "--long-name") ends, or -1 when its dashes name nothing.
func optionName(text string, i int) int {
	j := i
	for j < len(text) && text[j] == '-' && j-i < 2 {
		j++
	}
	k := j
	for k < len(text) && isOptionByte(text[k]) {
		k++
	}
	if k == j || !isAlnum(text[j]) {
		return -1
	}
	return k
}

// afterOption skips what may follow an option name at text[i] (a
// metavariable or "=VALUE") up to a comma or a run of two spaces. After a
// comma it skips the spaces to the next option and reports more.
func afterOption(text string, i int) (next int, more bool) {
	for i < len(text) && text[i] != ',' && !(text[i] == ' ' && i+1 < len(text) && text[i+1] == ' ') {
		i++
	}
	if i < len(text) && text[i] == ',' {
		i++
		for i < len(text) && text[i] == ' ' {
			i++
		}
		return i, true
	}
	return i, false
}

// helpBeside reports whether rest (what follows an option's names) is two
// or more spaces and then help text.
func helpBeside(rest string) bool {
	n := 0
	for n < len(rest) && (rest[n] == ' ' || rest[n] == '\t') {
		n++
	}
	return n >= 2 && n < len(rest)
}

func isOptionByte(c byte) bool { return isAlnum(c) || c == '-' || c == '_' || c == '.' }

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// containsWord reports whether s holds w between non-letters.
func containsWord(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if s[i:i+len(w)] == w && (i == 0 || !isAlnum(s[i-1])) && (i+len(w) == len(s) || !isAlnum(s[i+len(w)])) {
			return true
		}
	}
	return false
}
