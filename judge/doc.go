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
package judge
