// fmt's compiled part, built here from Debian's fmt headers for the binaries that link the C++
// runtime into themselves (drover_static_cxx_runtime in cmake/drover.cmake): Debian ships fmt
// as a shared library only (libfmt.so), which would bring libstdc++.so back into them.
//
// Contract: defines what libfmt.so does for char: the non-template functions of format-inl.h
// (emitted here, FMT_HEADER_ONLY being undefined), and the instantiations of the templates that
// fmt's headers declare and format-inl.h defines. A later fmt whose headers call one more fails
// to link the client (an undefined symbol), not at run time.

#include <fmt/format-inl.h>

#include <locale>

FMT_BEGIN_NAMESPACE
namespace detail {

template auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;

template locale_ref::locale_ref(const std::locale& loc);
template auto locale_ref::get<std::locale>() const -> std::locale;

template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl(locale_ref) -> char;
template void buffer<char>::append(const char*, const char*);
template void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>,
                         locale_ref);

}  // namespace detail
FMT_END_NAMESPACE
