package judge

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/llmfleet/analyzer/domain"
)

var (
	lastExceptionLine = regexp.MustCompile(`([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt))\s*:\s*(.*)`)
	maskPath          = regexp.MustCompile(`(?:/[\w.@+-]+)+`)
	maskHex           = regexp.MustCompile(`\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{12,}\b`)
	maskNum           = regexp.MustCompile(`\d+(?:[.,]\d+)*`)
	maskPrefix        = regexp.MustCompile(`^.*?\b(?:ERROR|WARNING|INFO|CRITICAL)\b[^\]]*\]\s*`)
)

// fingerprint groups identical unknown failures: the last exception (or
// last error-looking line) with numbers, hex ids and paths masked.
func fingerprint(lines []domain.Evidence) string {
	d, ok := DecisiveLine(lines)
	if !ok {
		return ""
	}
	s := maskPrefix.ReplaceAllString(d.Message, "")
	if m := lastExceptionLine.FindStringSubmatch(s); m != nil {
		s = m[1] + ": " + m[2]
	}
	s = maskPath.ReplaceAllString(s, "<path>")
	s = maskHex.ReplaceAllString(s, "<hex>")
	s = maskNum.ReplaceAllString(s, "<n>")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200]
	}
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:6]) + " " + s
}

func unknownNote(a *domain.Attempt, result string, lastErrors []domain.Evidence) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The %s attempt failed in phase %s and no rule explains why.", orUnknown(a.Engine), a.Phase)
	if d := a.ExitDescription(); d != "" {
		fmt.Fprintf(&b, " The main process %s.", d)
	}
	if result != "" {
		fmt.Fprintf(&b, " systemd result: %s.", result)
	}
	if len(lastErrors) > 0 {
		fmt.Fprintf(&b, " Last error-looking line: %q.", lastErrors[len(lastErrors)-1].Message)
	}
	b.WriteString(" Read the evidence lines; if this repeats, write a rule for it so the next one is named.")
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "engine"
	}
	return s
}
