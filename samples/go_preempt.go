// Two goroutines loop without a call (so without a stack check, where the runtime would
// stop them by itself) while main collects garbage three times: each collection
// stops the world, which waits until the runtime's preemption signal (SIGURG) has stopped
// both loops. With GODEBUG=asyncpreemptoff=1 the program never ends. Each loop's count of
// iterations goes to the file named by the first argument (it varies from run to run).
package main

import (
	"fmt"
	"io/ioutil"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

var (
	started int32
	stop    int32
	sums    [2]uint64
)

//go:noinline
func spin(slot int) uint64 {
	atomic.AddInt32(&started, 1)
	x, n := uint64(slot), uint64(0)
	for stop == 0 { // (a plain load: an atomic one is a call on ARM)
		x = x*6364136223846793005 + 1442695040888963407
		n++
	}
	sums[slot] = x
	return n
}

func main() {
	runtime.GOMAXPROCS(2)
	var done sync.WaitGroup
	var iterations [2]uint64
	for i := range iterations {
		done.Add(1)
		go func(slot int) {
			iterations[slot] = spin(slot)
			done.Done()
		}(i)
	}
	for atomic.LoadInt32(&started) < 2 {
		runtime.Gosched()
	}
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	atomic.StoreInt32(&stop, 1)
	done.Wait()
	if len(os.Args) > 1 {
		text := fmt.Sprintf("%d %d\n", iterations[0], iterations[1])
		if err := ioutil.WriteFile(os.Args[1], []byte(text), 0o644); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println("collected three times with two goroutines spinning")
	os.Exit(4)
}
