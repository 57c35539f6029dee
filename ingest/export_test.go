package ingest

// MapEveryFile makes ReadFile map files of any size and drop the map
// behind its reader at every page, until the returned func runs.
func MapEveryFile() (restore func()) {
	n, d, k := mapMin, dropEvery, keepBehind
	mapMin, dropEvery, keepBehind = 1, pageSize, pageSize
	return func() { mapMin, dropEvery, keepBehind = n, d, k }
}

// MappedAgainstRead is mappedAgainstRead: path read through its map and
// through read(2), the first difference, and the format.
var MappedAgainstRead = mappedAgainstRead
