package ingest

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/domain"
)

// Lines of one stream share their unchanged Fields map; a changed field
// gets a map of its own with its values, and a reassembled line's map
// (which reassembly writes to) is never the shared one.
func TestFieldsShareUnchangedMap(t *testing.T) {
	in := strings.Join([]string{
		`{"MESSAGE":"a","_TRANSPORT":"stdout","CONTAINER_NAME":"c1","__CURSOR":"1","__REALTIME_TIMESTAMP":"1000000"}`,
		`{"MESSAGE":"b","_TRANSPORT":"stdout","CONTAINER_NAME":"c1","__CURSOR":"2","__REALTIME_TIMESTAMP":"2000000"}`,
		`{"MESSAGE":"c","_TRANSPORT":"stdout","CONTAINER_NAME":"c2","__CURSOR":"3","__REALTIME_TIMESTAMP":"3000000"}`,
		`{"MESSAGE":"d","_TRANSPORT":"stdout","CONTAINER_NAME":"c2","CONTAINER_ID_FULL":"abc","PRIORITY":"6","__CURSOR":"4","__REALTIME_TIMESTAMP":"4000000","CONTAINER_PARTIAL_MESSAGE":"true"}`,
		`{"MESSAGE":"e","_TRANSPORT":"stdout","CONTAINER_NAME":"c2","CONTAINER_ID_FULL":"abc","PRIORITY":"6","__CURSOR":"5","__REALTIME_TIMESTAMP":"5000000"}`,
	}, "\n")
	var es []domain.Entry
	if _, err := Read(context.Background(), strings.NewReader(in), "t", Options{}, func(e domain.Entry) error {
		es = append(es, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(es) != 4 {
		t.Fatalf("%d entries, want 4 (d and e reassembled)", len(es))
	}
	ptr := func(m map[string]string) uintptr { return reflect.ValueOf(m).Pointer() }
	if ptr(es[0].Fields) != ptr(es[1].Fields) {
		t.Error("a and b do not share their map")
	}
	if ptr(es[1].Fields) == ptr(es[2].Fields) || es[1].Fields["CONTAINER_NAME"] != "c1" || es[2].Fields["CONTAINER_NAME"] != "c2" {
		t.Errorf("c changed CONTAINER_NAME: %v then %v", es[1].Fields, es[2].Fields)
	}
	if es[3].Message != "de" || ptr(es[3].Fields) == ptr(es[2].Fields) || es[3].Fields[FieldPieces] != "2" {
		t.Errorf("reassembled %q: %v", es[3].Message, es[3].Fields)
	}
	if _, ok := es[2].Fields[FieldPieces]; ok {
		t.Errorf("reassembly wrote into the shared map: %v", es[2].Fields)
	}
}
