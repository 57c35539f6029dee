package tracker

// Fields are the journal fields besides the Entry members that the tracker
// reads (systemd.journal-fields(7), systemd's unit messages, podman's
// journald events driver). A reader may keep only these in Entry.Fields
// (ingest.Options.Fields); TestFieldsListsEveryRead keeps the list complete.
var Fields = []string{
	"_TRANSPORT",
	"MESSAGE_ID",
	// PID 1's unit lifecycle messages.
	"UNIT", "INVOCATION_ID", "JOB_TYPE", "N_RESTARTS", "EXIT_CODE", "EXIT_STATUS", "UNIT_RESULT",
	// podman events and conmon's container log lines.
	"PODMAN_EVENT", "PODMAN_ID", "PODMAN_NAME", "CONTAINER_ID", "CONTAINER_ID_FULL", "CONTAINER_NAME",
	// The analyzer's own notes, which the tracker must recognise and skip.
	"OBJECT_SYSTEMD_UNIT",
	// Set by the journal follower and by ingest.
	GapField, LogLossField, PastedField,
}
