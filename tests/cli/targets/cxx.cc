// SPDX-License-Identifier: MIT
// tgt_cxx N: C++ functions with overloads, a const member, templates and
// libstdc++'s strings, each called N times (the demangling tests).
#include <cstdio>
#include <cstdlib>
#include <string>

namespace shapes {
struct Circle {
	double r;
	double area() const;
};
__attribute__((noinline)) double Circle::area() const { return 3.0 * r * r; }
__attribute__((noinline)) int scale(int x) { return x * 2; }
__attribute__((noinline)) double scale(double x) { return x * 2.5; }
template <typename T> __attribute__((noinline)) T twice(T v) { return v + v; }
} // namespace shapes

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	std::string s;
	double acc = 0;

	for (int i = 0; i < n; i++) {
		shapes::Circle c{(double)i};

		acc += c.area() + shapes::scale(i) + shapes::scale((double)i) + shapes::twice(i) +
		       shapes::twice((double)i);
		s.append("ab");
		s.append(std::string("c"));
	}
	printf("calls %d length %zu sum %.1f\n", n, s.size(), acc);
	return 0;
}
