// Faults a Go program turns into panics and recovers from (decision 0089): fmt prints a nil
// pointer whose String method dereferences it, a deferred recover catches a nil
// dereference three times; goroutines that end (they return to runtime.goexit + 4); exit
// status 3. Built by Debian's Go for GOARCH=arm (tests/support/samples.py build_go).
package main

import (
	"fmt"
	"os"
)

type T struct{ x int }

func (t *T) String() string { return fmt.Sprint(t.x) }

//go:noinline
func get(p *T) int { return p.x }

func try(p *T) (v int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("recovered: %v", r)
		}
	}()
	return get(p), nil
}

func main() {
	var nilT *T
	fmt.Printf("%v\n", nilT)
	for i := 0; i < 3; i++ {
		v, err := try(nil)
		fmt.Println(v, err)
	}
	v, err := try(&T{7})
	fmt.Println(v, err)
	done := make(chan int)
	for i := 0; i < 4; i++ {
		go func(k int) { done <- k * k }(i)
	}
	s := 0
	for i := 0; i < 4; i++ {
		s += <-done
	}
	fmt.Println("sum", s)
	os.Exit(3)
}
