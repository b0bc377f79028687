//go:build linux

package cachedprom

import (
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/otelcol-red/otelcol-red/internal/offheap"
)

// BenchmarkServeBody measures what serving one gzip body costs the serving
// process, by the two ways the kernel can be handed the bytes: one Write
// from an anonymous mapping (the kernel copies them into socket buffers)
// and sendfile from a memfd (the socket buffers reference the file's pages).
// The client is curl in a child process scraping back to back over one
// keep-alive connection and discarding the body, so the CPU it spends is
// counted apart (ProcessState) from the server's (getrusage of this
// process, which does nothing else meanwhile). On loopback the receive-side
// TCP processing runs in softirq on whichever side sends a segment, so the
// split between the two is not exact; the sum is reported as well.
//
// Pin the server and the client to one core each so they do not take
// turns on one, as the testbed does:
//
//	GOMAXPROCS=1 taskset -c 0 go test ./exporter/cachedprom/ -run '^$' -bench ServeBody -benchtime=300x
//
// with CACHEDPROM_BENCH_CLIENT_CPU (default 1) naming the client's core.
// CACHEDPROM_BENCH_BODY_BYTES sets the body size (default 9 MiB, the gzip
// body of 100k RED series).
func BenchmarkServeBody(b *testing.B) {
	size := 9 << 20
	if s := os.Getenv("CACHEDPROM_BENCH_BODY_BYTES"); s != "" {
		var err error
		size, err = strconv.Atoi(s)
		require.NoError(b, err)
	}
	curl, err := exec.LookPath("curl")
	require.NoError(b, err, "the client of this benchmark is curl")
	clientCPU := os.Getenv("CACHEDPROM_BENCH_CLIENT_CPU")
	if clientCPU == "" {
		clientCPU = "1"
	}
	taskset, _ := exec.LookPath("taskset")

	content := make([]byte, size)
	_, _ = rand.Read(content) // a gzip body is incompressible noise to the kernel as well

	anon := offheap.Map(size)
	require.NotNil(b, anon)
	defer offheap.Unmap(anon)
	copy(anon, content)

	fd, err := unix.MemfdCreate("bench-body", unix.MFD_CLOEXEC)
	require.NoError(b, err)
	defer syscall.Close(fd)
	require.NoError(b, unix.Ftruncate(fd, int64(size)))
	shared, err := syscall.Mmap(fd, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	require.NoError(b, err)
	defer func() { _ = syscall.Munmap(shared) }()
	copy(shared, content)
	procPath := "/proc/self/fd/" + strconv.Itoa(fd)

	for _, mode := range []string{"write", "sendfile"} {
		b.Run("mode="+mode, func(b *testing.B) {
			h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.Header().Set("Content-Encoding", "gzip")
				w.Header().Set("Content-Length", strconv.Itoa(size))
				w.WriteHeader(http.StatusOK)
				if mode == "write" {
					_, _ = w.Write(anon)
					return
				}
				// Each scrape opens the memfd again for a file offset of
				// its own: Go's sendfile on Linux sends from the file's
				// current position.
				f, err := os.Open(procPath)
				if err != nil {
					panic(err)
				}
				defer f.Close()
				_, _ = w.(io.ReaderFrom).ReadFrom(&io.LimitedReader{R: f, N: int64(size)})
			})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(b, err)
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
			go func() { _ = srv.Serve(ln) }()
			defer srv.Close()

			url := "http://" + ln.Addr().String() + "/metrics"
			args := []string{"-s", "--fail", "-H", "Accept-Encoding: gzip", "-w", "%{size_download}\n"}
			for range b.N {
				args = append(args, "-o", os.DevNull, url)
			}
			var cmd *exec.Cmd
			if taskset != "" {
				cmd = exec.Command(taskset, append([]string{"-c", clientCPU, curl}, args...)...)
			} else {
				cmd = exec.Command(curl, args...)
			}
			var out strings.Builder
			cmd.Stdout = &out

			// One scrape outside the measure checks the bytes arrive intact.
			req, err := http.NewRequest(http.MethodGet, url, nil)
			require.NoError(b, err)
			req.Header.Set("Accept-Encoding", "gzip") // set by hand: the transport then leaves the body as sent
			client := &http.Client{Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			resp, err := client.Do(req)
			require.NoError(b, err)
			got, err := io.ReadAll(resp.Body)
			require.NoError(b, err)
			require.NoError(b, resp.Body.Close())
			require.Equal(b, content, got)

			var before, after syscall.Rusage
			require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &before))
			start := time.Now()
			b.ResetTimer()
			require.NoError(b, cmd.Run())
			b.StopTimer()
			wall := time.Since(start)
			require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &after))

			// curl prints the size of each body it received.
			require.Equal(b, strings.Repeat(strconv.Itoa(size)+"\n", b.N), out.String(), "every scrape got the whole body")

			user := time.Duration(after.Utime.Nano() - before.Utime.Nano())
			sys := time.Duration(after.Stime.Nano() - before.Stime.Nano())
			curlCPU := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			perScrape := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
			b.ReportMetric(perScrape(user+sys), "server-cpu-µs/scrape")
			b.ReportMetric(perScrape(sys), "server-sys-µs/scrape")
			b.ReportMetric(perScrape(curlCPU), "client-cpu-µs/scrape")
			b.ReportMetric(perScrape(user+sys+curlCPU), "total-cpu-µs/scrape")
			b.ReportMetric(perScrape(wall)/1000, "ms/scrape")
		})
	}
}
