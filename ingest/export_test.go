package ingest

// InPlaceAgainstLines is inPlaceAgainstLines: path read as ReadFile reads
// it and line by line, the first difference, and the format.
var InPlaceAgainstLines = inPlaceAgainstLines
