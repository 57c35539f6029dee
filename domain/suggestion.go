package domain

// RuleSuggestion is a rule file entry proposed for an unknown failure
// (`analyzer rules suggest`, the unknown failure page's form), with what it
// would do: the outcome of its own tests and lint, and the stored unknown
// failures it would name.
type RuleSuggestion struct {
	// Source is the attempt or failure group id it was made for;
	// Attempts how many of its attempts gave a line.
	Source   string
	Attempts int
	// Verdict is the one the operator chose.
	Verdict Verdict
	// RuleID is the rule's id and File the file name it is saved as
	// (RuleID + ".yaml").
	RuleID, File string
	// Text is the rule file (YAML).
	Text string
	// Lint are `rules lint` warnings about the rule.
	Lint []string
	// Passed and Failed count its tests; Problems say what failed.
	Passed, Failed int
	Problems       []string
	// Named are the stored unknown failures it names, as they would be
	// once it is in use; Read is how many stored unknown failures were
	// read.
	Named []*Attempt
	Read  int
	// Saved is the path it was saved as; "" when it was not.
	Saved string
}

// RuleSuggestionRequest is what an operator asks of a suggestion: the
// verdict the rule gives, optionally its id and title, and whether to save
// it into the rule directory in use.
type RuleSuggestionRequest struct {
	Verdict       Verdict
	RuleID, Title string
	Save          bool
}
