/* SPDX-License-Identifier: MIT */
/*
 * The agent's demangling (agent/demangle.c): C++ (Itanium ABI), Rust
 * legacy (_ZN...17h<hash>E) and Rust v0 (_R) names as people read them,
 * plain C names left alone, and the qualified name event names are made
 * from. (Rust programs cannot be built here; the names are the ones
 * rustc emits for these paths.)
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

static void expect(const char *mangled, const char *want)
{
	char *d = ukpa_demangle(mangled);

	cr_assert(d, "%s did not demangle", mangled);
	cr_expect_str_eq(d, want, "%s", mangled);
	free(d);
}

Test(demangle, cxx)
{
	expect("_ZN6shapes5scaleEi", "shapes::scale(int)");
	expect("_ZNK6shapes6Circle4areaEv", "shapes::Circle::area() const");
	expect("_ZN6shapes5twiceIiEET_S1_", "int shapes::twice<int>(int)");
	expect("_Znwm", "operator new(unsigned long)");
}

Test(demangle, rust)
{
	expect("_ZN7mycrate3foo3bar17h0123456789abcdefE", "mycrate::foo::bar");
	expect("_RNvNtCs1234_7mycrate3foo3bar", "mycrate::foo::bar");
	expect("_RNvCs1234_7mycrate4main", "mycrate::main");
}

Test(demangle, c_names)
{
	cr_expect_null(ukpa_demangle("malloc"));
	cr_expect_null(ukpa_demangle("_start"));
	cr_expect(!ukpa_mangled("__libc_start_main"));
	cr_expect(ukpa_mangled("_ZN1a1bEv") && ukpa_mangled("_RNvC1a1b"));
}

Test(demangle, base)
{
	static const char *const cases[][2] = {
		{ "shapes::scale(int)", "shapes::scale" },
		{ "int shapes::twice<int>(int)", "shapes::twice" },
		{ "shapes::Circle::area() const", "shapes::Circle::area" },
		{ "operator new(unsigned long)", "operator new" },
		{ "std::vector<int, std::allocator<int> >::operator()(int)",
		  "std::vector::operator()" },
		{ "mycrate::foo::bar", "mycrate::foo::bar" },
		/* Rust v0: a method's type path, a trait method's type */
		{ "<panics::shapes::Circle>::area", "panics::shapes::Circle::area" },
		{ "<alloc::vec::Vec<u8> as core::ops::drop::Drop>::drop", "alloc::vec::Vec::drop" },
		{ "<u32 as core::fmt::Display>::fmt", "u32::fmt" },
	};
	char out[256];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ukpa_demangled_base(cases[i][0], out, sizeof(out));
		cr_expect_str_eq(out, cases[i][1], "%s", cases[i][0]);
	}
}
