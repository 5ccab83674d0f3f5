// A Go program with work the runtime shares out (decision 0121): goroutines on several
// threads counting Collatz steps (a loop without calls), a map and a sort, a nil
// dereference in a function with a frame and a write to a nil map, both recovered by
// deferred functions, goroutines that end (they return to runtime.goexit + 1 on amd64),
// flags the compiler keeps live across a call of runtime.duffzero, exit status 3. Built
// by Debian's Go (tests/support/samples.py build_go).
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

type T struct{ x, y int }

//go:noinline
func framed(p *T, n int) int {
	s := fmt.Sprint(n)
	return len(s) + p.y
}

func try(p *T, n int) (v int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("recovered: %v", r)
		}
	}()
	return framed(p, n), nil
}

//go:noinline
func collatz(n int) int {
	steps := 0
	for n != 1 {
		if n%2 == 0 {
			n /= 2
		} else {
			n = 3*n + 1
		}
		steps++
	}
	return steps
}

// runes zeroes buf (a call of runtime.duffzero) between its bound's compare and the
// slice's check, which reads the compare's flags after the call (cmp; jg; call; ja).
//
//go:noinline
func runes(buf *[32]int32, n int) []int32 {
	if buf != nil && n <= len(buf) {
		*buf = [32]int32{}
		return buf[:n]
	}
	return make([]int32, n)
}

func main() {
	for i := 0; i < 3; i++ {
		v, err := try(nil, i)
		fmt.Println(v, err)
	}
	v, err := try(&T{1, 2}, 42)
	fmt.Println(v, err)
	func() {
		defer func() { fmt.Println("recovered:", recover()) }()
		var m map[string]int
		m["x"] = 1
	}()
	var buf [32]int32
	fmt.Println(len(runes(&buf, 5)), len(runes(&buf, 32)), len(runes(nil, 3)))
	counts := map[string]int{}
	for _, w := range strings.Fields("the quick brown fox jumps over the lazy dog the end") {
		counts[w]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Println(k, counts[k])
	}
	results := make([]int, 8)
	done := make(chan int)
	for g := 0; g < 8; g++ {
		go func(g int) {
			s := 0
			for n := 1 + g*500; n <= (g+1)*500; n++ {
				s += collatz(n)
			}
			results[g] = s
			done <- g
		}(g)
	}
	for g := 0; g < 8; g++ {
		<-done
	}
	fmt.Println(results)
	os.Exit(3)
}
