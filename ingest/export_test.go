package ingest

// MapEveryFile makes ReadFile map files of any size and drop the map
// behind its reader at every page, until the returned func runs.
func MapEveryFile() (restore func()) {
	n, d := mapMin, dropEvery
	mapMin, dropEvery = 1, pageSize
	return func() { mapMin, dropEvery = n, d }
}
