// SPDX-License-Identifier: MIT
// srcvars_cxx N: the C++ part of the source-level probes' tests (case
// dwarf_cxx): a member function (this->member), a reference's members,
// an overload named with its parameters; each call prints the values a
// probe on it must show.
#include <cstdio>
#include <cstdlib>

namespace acc {
struct Acc {
	long total;
	int count;
	__attribute__((noinline)) long add(int n);
};

__attribute__((noinline)) long Acc::add(int n)
{
	std::printf("add n=%d total=%ld count=%d\n", n, total, count);
	total += n;
	count++;
	return total;
}

__attribute__((noinline)) void bump(Acc &a, int by)
{
	std::printf("bump by=%d total=%ld count=%d\n", by, a.total, a.count);
	a.total += by;
}

__attribute__((noinline)) void bump(Acc &a, long by)
{
	a.total -= by;
}
} // namespace acc

int main(int argc, char **argv)
{
	acc::Acc a{-5, 0};
	int n = argc > 1 ? std::atoi(argv[1]) : 3;

	for (int i = 0; i < n; i++) {
		a.add(i * 3 - 4);
		acc::bump(a, -i);
		acc::bump(a, 1L);
	}
	return 0;
}
