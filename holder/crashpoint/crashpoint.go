package crashpoint

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
)

// EnvVar names the environment variable that arms a crash point.
const EnvVar = "SEXTON_CRASH_AT"

// armedName is read once: a crash point is a property of the process, not
// something that changes while it runs. Without the testhooks build tag
// Enabled is false and the variable is never read.
var armedName = armedFromEnv()

func armedFromEnv() string {
	if !Enabled {
		return ""
	}
	return os.Getenv(EnvVar)
}

var (
	mu       sync.Mutex
	registry = map[string]*Point{}
)

// Point is one named crash point.
type Point struct {
	name  string
	armed bool
}

// New registers a crash point. Names are global; registering one twice is a
// programming error and panics at init, so a binary can never carry two
// points that a drill cannot tell apart. Without the testhooks build tag
// nothing is registered and the point never fires.
func New(name string) *Point {
	if !Enabled {
		return &Point{name: name}
	}
	mu.Lock()
	defer mu.Unlock()
	if name == "" {
		panic("crashpoint: empty name")
	}
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("crashpoint: %q registered twice", name))
	}
	p := &Point{name: name, armed: armedName != "" && armedName == name}
	registry[name] = p
	return p
}

// Name is the point's name.
func (p *Point) Name() string { return p.name }

// Hit kills the process with SIGKILL if this point is armed. Nothing runs
// after it: no deferred function, no buffered log flush, exactly like a
// power cut from the process's point of view (the page cache survives).
// Without the testhooks build tag it is empty and compiles away.
func (p *Point) Hit() {
	if !Enabled {
		return
	}
	if h := hook.Load(); h != nil {
		(*h)(p.name)
	}
	if !p.armed {
		return
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL is not deliverable late; never return into the caller.
}

// hook, when set, runs at every Hit before the armed check.
var hook atomic.Pointer[func(name string)]

// SetHook makes every crash point call fn with its name when it is hit,
// in this process, before (and besides) the armed check: an in-process
// test cuts the power of a model filesystem there instead of killing the
// process. nil removes the hook. It is process-wide, so only a test that
// does not run in parallel with other store tests may set it; it does
// nothing without the testhooks build tag.
func SetHook(fn func(name string)) {
	if fn == nil {
		hook.Store(nil)
		return
	}
	hook.Store(&fn)
}

// Names lists every registered crash point, sorted: none without the
// testhooks build tag.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	return slices.Sorted(maps.Keys(registry))
}

// Armed is the name of the point this process will die at, or "".
func Armed() string { return armedName }
