// Package judge judges one boot attempt from its lines with a rule set:
// the per-attempt state and protocol that turn an engine's output into the
// spec's verdict, phase, findings, notes and evidence.
//
// It sits between the tracker and the rule language:
//
//	journal → ingest → tracker → judge (rules) → store → web, notes, metrics
//
// The tracker cuts entries into attempts and keeps one Judge per attempt;
// the judge reads that attempt's lines with package rules (the rule files'
// schema, their compiler and matcher, the engine profiles and the reload
// manager), the way Prometheus keeps its rule-file format (model/rulefmt)
// apart from the rule evaluation (rules). The judge does no I/O.
//
// Its jobs, one file each:
//
//   - judge.go: the Judge, its options and the facts a caller gives it
//     (start, phase, shape, findings raised outside the rules);
//   - detect.go: which engine speaks (evidence weighed per engine family),
//     and the early lines judged again when that changes;
//   - lines.go: one line's phase marker, readiness, shape, fatal events
//     and rule hits;
//   - phases.go: the phase timeline, the forward steps of the boot and the
//     phase a finding is in;
//   - exception.go: tracebacks, C++ terminates, panics and error lines,
//     per process;
//   - usage.go: an argument parser's usage text, which is no event;
//   - choose.go: which root cause still stands and names the verdict;
//   - verdict.go: the attempt as judged (Judge.Judge): verdict, phase,
//     note, findings, evidence with their roles, end rules;
//   - restore.go: taking up an attempt an earlier run left open;
//   - unknown.go: the note and fingerprint of a failure no rule explains;
//   - ring.go: the lines before a decisive line, for its context.
package judge
