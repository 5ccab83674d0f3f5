// Goroutines that gccgo's library (libgo) runs on threads it starts itself: the program calls
// no pthread_create (tests/test_library_threads.py).
package main

import "fmt"

func work(id int, out chan<- int) {
	s := 0
	a := make([]int, 64)
	for i := 0; i < 200000; i++ {
		a[i%64] += i
		s += a[(i*7)%64] % 13
	}
	out <- s
}

func main() {
	out := make(chan int)
	for i := 0; i < 4; i++ {
		go work(i, out)
	}
	t := 0
	for i := 0; i < 4; i++ {
		t += <-out
	}
	fmt.Println("total", t)
}
