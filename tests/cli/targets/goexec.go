// A static Go program that runs commands with os/exec (case go_static:
// -f on Go's clone(CLONE_VM|CLONE_VFORK) and exec): calls work() 100
// times, then runs itself with "child" 5 times (each child calls work()
// 1000 times and prints its sum), prints every child's output, its own
// sum and "done", and exits 0.
package main

import (
	"fmt"
	"os"
	"os/exec"
)

//go:noinline
func work(i int) int {
	return 2*i + 1
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		s := 0
		for i := 0; i < 1000; i++ {
			s += work(i)
		}
		fmt.Println("child", s)
		os.Exit(0)
	}
	s := 0
	for i := 0; i < 100; i++ {
		s += work(i)
	}
	for k := 0; k < 5; k++ {
		out, err := exec.Command(os.Args[0], "child").Output()
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Print(string(out))
	}
	fmt.Println("parent", s)
	fmt.Println("done")
	os.Exit(0)
}
