// One goroutine computes a checksum in a loop without calls whose branches read the flags
// of the comparison before them, while main collects garbage until it ends: every
// collection stops the loop by Go's preemption signal, wherever it is, and Go's
// asyncPreempt gives it back every register and the flags as they were. The checksum
// does not depend on where the loop was stopped; a flag lost there sends a branch the
// other way and changes it.
package main

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
)

var finished int32

//go:noinline
func checksum(seed uint64, n int) uint64 {
	x, s := seed, uint64(0)
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		if x&0xff < 0x80 {
			s += x
		} else {
			s -= x >> 3
		}
		if int64(x) < 0 {
			s ^= 0x5555
		}
		if uint32(x) > uint32(s) {
			s++
		}
	}
	return s
}

func main() {
	runtime.GOMAXPROCS(2)
	result := make(chan uint64)
	go func() {
		sum := checksum(88172645463325252, 20_000_000)
		atomic.StoreInt32(&finished, 1)
		result <- sum
	}()
	collections := 0
	for atomic.LoadInt32(&finished) == 0 {
		runtime.GC()
		collections++
	}
	fmt.Printf("checksum %x\n", <-result)
	if collections == 0 {
		fmt.Println("no collection while the loop ran")
	}
	os.Exit(5)
}
