package domain

import "testing"

// TestSplitCompose holds the lines both former strippers saw: the
// tracker's regex (engine output lines) and ingest's loop (LineTime, the
// paste reader's service column). They disagreed on the rows marked; the
// regex was right, as compose pads every service name with blanks before
// the bar and names start with a letter or digit.
func TestSplitCompose(t *testing.T) {
	for _, tc := range []struct {
		name, line, service, rest string
		ok                        bool
	}{
		// tracker inputs
		{"vllm service", "vllm-1  | INFO 10-01 21:40:04 [api_server.py:1805] vLLM API server version 0.19.2", "vllm-1",
			"INFO 10-01 21:40:04 [api_server.py:1805] vLLM API server version 0.19.2", true},
		{"one blank, no space after the bar", "sglang_router.1 |[2026-01-01 10:00:00] ready", "sglang_router.1", "[2026-01-01 10:00:00] ready", true},
		{"only one space after the bar is dropped", "tgi-1 |   indented", "tgi-1", "  indented", true},
		{"tab padding", "vllm-1\t| x", "vllm-1", "x", true},
		{"empty line after the column", "vllm-1  |", "vllm-1", "", true},
		{"no column", "INFO 10-01 21:40:04 loading", "", "INFO 10-01 21:40:04 loading", false},
		{"tqdm bar", "Capturing batches (bs=8 avail_mem=0.53 GB):  25%|██▌       | 1/4", "", "Capturing batches (bs=8 avail_mem=0.53 GB):  25%|██▌       | 1/4", false},
		{"leading blank", "  vllm-1  | x", "", "  vllm-1  | x", false},
		{"empty", "", "", "", false},
		// ingest inputs (LineTime, paste)
		{"timestamped", "vllm-1  | 2025-01-15T10:00:00.5+02:00 INFO", "vllm-1", "2025-01-15T10:00:00.5+02:00 INFO", true},
		{"pasted", "vllm-1  | 2025-01-01 10:00:00 INFO x", "vllm-1", "2025-01-01 10:00:00 INFO x", true},
		// the loop took these as columns, the regex did not
		{"bar right after a word", "INFO|2025-01-01 10:00:00 x", "", "INFO|2025-01-01 10:00:00 x", false},
		{"name starting with '-'", "-x  | y", "", "-x  | y", false},
		{"name starting with '.'", ".hidden | y", "", ".hidden | y", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, rest, ok := SplitCompose(tc.line)
			if svc != tc.service || rest != tc.rest || ok != tc.ok {
				t.Errorf("SplitCompose(%q) = %q, %q, %v; want %q, %q, %v", tc.line, svc, rest, ok, tc.service, tc.rest, tc.ok)
			}
		})
	}
}

// TestSplitPodPrefix: kubectl's pod column, and lines that only look like it.
func TestSplitPodPrefix(t *testing.T) {
	for _, tc := range []struct {
		line, pod, rest string
		ok              bool
	}{
		{"[pod/vllm-0/vllm] INFO x", "pod/vllm-0/vllm", "INFO x", true},
		{"[pod/a.b_c-1/main]", "pod/a.b_c-1/main", "", true},
		{"[pod/vllm-0] INFO x", "", "[pod/vllm-0] INFO x", false},   // no container
		{"[pod/vllm-0/] INFO x", "", "[pod/vllm-0/] INFO x", false}, // empty container
		{"[pod/a/b/c] INFO x", "", "[pod/a/b/c] INFO x", false},     // one slash too many
		{"[pod/a b/c] INFO x", "", "[pod/a b/c] INFO x", false},     // a blank inside
		{"[2025-01-01 10:00:00 TP0] x", "", "[2025-01-01 10:00:00 TP0] x", false},
		{"[pod/" + string(make([]byte, 400)), "", "[pod/" + string(make([]byte, 400)), false},
	} {
		pod, rest, ok := SplitPodPrefix(tc.line)
		if pod != tc.pod || rest != tc.rest || ok != tc.ok {
			t.Errorf("SplitPodPrefix(%q) = %q, %q, %v; want %q, %q, %v", tc.line, pod, rest, ok, tc.pod, tc.rest, tc.ok)
		}
	}
}
