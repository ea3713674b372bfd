package holder

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"sexton/api"
	"sexton/holder/crashpoint"
)

// Child roles, as "<role>:<dir>".
const (
	roleOpen      = "open"      // open the store and report
	roleTombstone = "tombstone" // tombstone crashKey@crashInc
	rolePut       = "put"       // put crashKey@crashInc
	roleStream    = "stream"    // PutStream crashKey@crashInc, streamedCrashValue
	roleGC        = "gc"        // run one GC pass with the default policy
	roleAbsent    = "absent"    // tombstone crashKey@crashInc, whose record is not there
)

const crashKey = "crash-key"

var crashInc = incN(7)

func crashValue() []byte { return valueOf(crashKey, 3000) }

// streamedCrashValue is a value streamed in more than one chunk, with
// O_DIRECT.
func streamedCrashValue() []byte { return valueOf(crashKey, directMin+5000) }

// runChild is the child process's main. Exit codes: 0 done, 3 directory in
// use, 1 anything else.
func runChild(role string) int {
	kind, dir, _ := strings.Cut(role, ":")
	s, err := OpenStore(dir, StoreOptions{})
	if err != nil {
		fmt.Println("open error:", err)
		if errors.Is(err, ErrDirectoryInUse) {
			return 3
		}
		return 1
	}
	defer s.Close()
	switch kind {
	case roleOpen:
		fmt.Println("opened")
	case roleTombstone, roleAbsent:
		rs := s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, crashKey, crashInc)})
		fmt.Println("results:", outcomes(rs))
	case rolePut:
		if err := s.Put(crashKey, "t", crashInc, crashValue()); err != nil {
			fmt.Println("put error:", err)
			return 1
		}
		fmt.Println("ACK")
	case roleStream:
		v := streamedCrashValue()
		if err := s.PutStream(crashKey, "t", crashInc, int64(len(v)), bytes.NewReader(v)); err != nil {
			fmt.Println("put error:", err)
			return 1
		}
		fmt.Println("ACK")
	case roleGC:
		newGCWorker(s, testGCOptions(), nil).pass()
		fmt.Printf("gc done: %+v\n", s.GCStats())
	default:
		return 1
	}
	return 0
}

// runChildProcess re-executes the test binary in a role, optionally with a
// crash point armed, and returns its output and wait status.
func runChildProcess(t *testing.T, role, dir, crashAt string) (string, syscall.WaitStatus) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role+":"+dir)
	if crashAt != "" {
		cmd.Env = append(cmd.Env, crashpoint.EnvVar+"="+crashAt)
	}
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run child: %v", err)
	}
	return string(out), cmd.ProcessState.Sys().(syscall.WaitStatus)
}
