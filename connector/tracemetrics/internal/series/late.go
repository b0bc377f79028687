package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

// Late spans (late_spans, internal/latespans): the reducer judges each span against the batch's
// time (Batch.TS) and counts what it saw in the batch (Batch.Late); under latespans.Separate a
// span outside the slack is keyed into a series of its own, marked by a bit of its key.

// LateKey is the attribute that marks a series of late (or early) spans under
// latespans.Separate. Series of spans on time do not carry it, so that their attributes stay
// spanmetrics'.
const LateKey = "late"

// lateFlag, in a series key's family byte, marks a series of late spans (latespans.Separate);
// it is part of the identity, so the late and the on-time spans of one series key never merge.
const lateFlag = 0x40

// IsLateKey reports whether key is the key of a series of late spans.
func IsLateKey(key []byte) bool { return key[keyFamilyByte]&lateFlag != 0 }
