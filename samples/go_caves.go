// Two goroutines call a function three times in a row in a loop (so each call's return
// site leaves no room for a jump in place: its patch is a branch to a trampoline
// elsewhere) while main collects garbage twenty times, which stops both loops by Go's
// preemption signal. The build (tests/support/samples.py, go_caves) adds GENERATED
// functions of thirty calls each, as many as it takes for the loop's trampolines to lie
// in caves of other functions' original code that Go may preempt (decision 0137).
package main

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

var (
	started int32
	stop    int32
	ticks   uint32
)

//go:noinline
func tick() { ticks++ }

//go:noinline
func spin(slot int) uint64 {
	atomic.AddInt32(&started, 1)
	n := uint64(slot)
	for stop == 0 {
		tick()
		tick()
		tick()
		n++
	}
	return n
}

func main() {
	runtime.GOMAXPROCS(2)
	sum := 0
	for i, f := range generated {
		if i%50 == 0 {
			sum += f(i)
		}
	}
	var done sync.WaitGroup
	for i := 0; i < 2; i++ {
		done.Add(1)
		go func(slot int) {
			spin(slot)
			done.Done()
		}(i)
	}
	for atomic.LoadInt32(&started) < 2 {
		runtime.Gosched()
	}
	for i := 0; i < 20; i++ {
		runtime.GC()
	}
	atomic.StoreInt32(&stop, 1)
	done.Wait()
	fmt.Println("collected twenty times", sum)
	os.Exit(3)
}
