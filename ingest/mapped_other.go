//go:build !unix

package ingest

import "os"

func mapFile(*os.File) []byte { return nil }

func unmapFile([]byte) {}

func dropBehind([]byte) {}
