//go:build !unix

package otlpwirereceiver

import "time"

// processCPU is not measured on this platform; cpu-ns/span reads 0.
func processCPU() time.Duration { return 0 }
