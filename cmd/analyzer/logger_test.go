package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestQuieterKeepsTheFormat: a library's logger built on the process's one
// logger drops its info lines and writes its warnings in the format
// --log-format chose, with the attributes it adds.
func TestQuieterKeepsTheFormat(t *testing.T) {
	var buf bytes.Buffer
	l, err := newLogger(&buf, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	lib := slog.New(quieter{l.Handler(), slog.LevelWarn}).With("component", "toolkit")
	lib.Info("Listening on", "address", "127.0.0.1:8080")
	lib.Warn("TLS is disabled")
	out := strings.TrimSpace(buf.String())
	if strings.Contains(out, "Listening on") || !strings.HasPrefix(out, `{"time":`) ||
		!strings.Contains(out, `"level":"WARN","msg":"TLS is disabled","component":"toolkit"`) || strings.Count(out, "\n") != 0 {
		t.Errorf("library log lines:\n%s", out)
	}
}
