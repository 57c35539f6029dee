package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// logFlags are the root's --log-level and --log-format: every command logs
// through one slog logger (slog.SetDefault), which the packages' own
// loggers default to.
type logFlags struct{ level, format string }

// newLogger is the process's logger on w: level debug, info, warn or error;
// format text (logfmt) or json. The error names the allowed values.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}

// quieter is h without the records below min: the process's one logger,
// for a library whose info lines would repeat what the analyzer says
// (exporter-toolkit's "Listening on").
type quieter struct {
	slog.Handler
	min slog.Level
}

func (q quieter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= q.min && q.Handler.Enabled(ctx, l)
}

func (q quieter) WithAttrs(as []slog.Attr) slog.Handler {
	return quieter{q.Handler.WithAttrs(as), q.min}
}

func (q quieter) WithGroup(name string) slog.Handler {
	return quieter{q.Handler.WithGroup(name), q.min}
}
