#include "benchmarks/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace sparsegen::bench {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 allows no control characters but tab, newline and carriage return.
        out +=
            static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r' ? ' ' : c;
    }
  }
  return out;
}

namespace {

constexpr double kCharW = 6.0;  // approximate advance of a 10 px sans-serif character
constexpr double kPlotH = 320;  // the plot area's height
constexpr double kLeft = 72, kRight = 24;
constexpr size_t kMaxLabel = 48;  // longer x labels keep their end (a file name), after "..."

// Characters, not bytes, of a UTF-8 string: for the width estimates.
size_t chars(std::string_view s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string shorten(const std::string& s) {
  if (chars(s) <= kMaxLabel) return s;
  size_t from = s.size() - (kMaxLabel - 3);
  while (from < s.size() && (static_cast<unsigned char>(s[from]) & 0xC0) == 0x80) ++from;
  return "..." + s.substr(from);
}

std::string num(double v) {
  return fmt::format("{:.1f}", v);
}

bool drawable(const std::optional<double>& v) {
  return v && std::isfinite(*v) && *v > 0;
}

}  // namespace

std::string render_svg(const LogBarChart& c) {
  const size_t n = c.categories.size();
  if (!(c.baseline > 0) || !std::isfinite(c.baseline))
    throw std::invalid_argument(fmt::format("render_svg: baseline {} is not positive", c.baseline));
  for (const BarSeries& s : c.series)
    if (s.values.size() != n)
      throw std::invalid_argument(fmt::format(
          "render_svg: series '{}' has {} values for {} categories", s.name, s.values.size(), n));
  for (const CategoryGroup& g : c.groups)
    if (g.begin > g.end || g.end > n)
      throw std::invalid_argument(fmt::format(
          "render_svg: group '{}' [{}, {}) outside {} categories", g.label, g.begin, g.end, n));

  // The y range: whole decades around the values and the baseline.
  double vmin = c.baseline, vmax = c.baseline;
  for (const BarSeries& s : c.series)
    for (const auto& v : s.values) {
      if (!drawable(v)) continue;
      vmin = std::min(vmin, *v);
      vmax = std::max(vmax, *v);
    }
  int lo = static_cast<int>(std::floor(std::log10(vmin) + 1e-9));
  int hi = static_cast<int>(std::ceil(std::log10(vmax) - 1e-9));
  if (hi - lo < 2) {  // at least two decades: one each side of a lone value
    --lo;
    ++hi;
  }

  // Horizontal layout: one slot per category, the series' bars side by side in it; the plot is
  // at least as wide as the title, the subtitle and the legend need.
  const size_t k = std::max<size_t>(1, c.series.size());
  double legend_w = 0;
  for (const BarSeries& s : c.series) legend_w += 24 + static_cast<double>(chars(s.name)) * kCharW;
  const double plot_w =
      std::max({480.0, (7.0 * static_cast<double>(k) + 6) * static_cast<double>(n),
                static_cast<double>(chars(c.title)) * 8.6,
                static_cast<double>(chars(c.subtitle)) * 6.6, legend_w});
  const double slot = n == 0 ? 0 : plot_w / static_cast<double>(n);
  const double bar_w = std::min(24.0, 0.8 * slot / static_cast<double>(k));

  std::vector<std::string> labels;
  size_t longest = 0;
  for (const std::string& s : c.categories) {
    labels.push_back(shorten(s));
    longest = std::max(longest, chars(labels.back()));
  }

  // Group labels go vertical when one is wider than its group.
  bool vertical = false;
  size_t group_text = 0;
  for (const CategoryGroup& g : c.groups) {
    const double span = slot * static_cast<double>(g.end - g.begin);
    const size_t w = std::max(chars(g.label), chars(g.note));
    if (static_cast<double>(w) * kCharW > span - 4) vertical = true;
    group_text = std::max(group_text, chars(g.label) + (g.note.empty() ? 0 : 2 + chars(g.note)));
  }
  const double group_h = c.groups.empty() ? 8
                         : vertical       ? static_cast<double>(group_text) * kCharW + 12
                                          : 34;
  const double legend_y = c.subtitle.empty() ? 44 : 62;
  const double top = legend_y + 16 + group_h;
  const double bottom = top + kPlotH;
  const double height = bottom + 16 + static_cast<double>(longest) * 0.9 * kCharW + 12;
  const double width = kLeft + plot_w + kRight;

  const double span = hi - lo;
  auto y_of = [&](double v) { return top + kPlotH * (hi - std::log10(v)) / span; };
  auto x_of = [&](size_t i) { return kLeft + slot * static_cast<double>(i); };

  std::string o;
  o += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"sans-serif\" font-size=\"10\">\n",
      num(width), num(height));
  o += fmt::format("<title>{}</title>\n", xml_escape(c.title));
  o += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
                   num(kLeft), xml_escape(c.title));
  if (!c.subtitle.empty())
    o += fmt::format("<text x=\"{}\" y=\"40\" font-size=\"11\" fill=\"#444\">{}</text>\n",
                     num(kLeft), xml_escape(c.subtitle));

  // Legend.
  o += "<g class=\"legend\">\n";
  double lx = kLeft;
  for (const BarSeries& s : c.series) {
    o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/>", num(lx),
                     num(legend_y - 9), xml_escape(s.color));
    o += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", num(lx + 14), num(legend_y),
                     xml_escape(s.name));
    lx += 24 + static_cast<double>(chars(s.name)) * kCharW;
  }
  o += "</g>\n";

  // Grid and y ticks: every decade, and 2 and 5 times it when the axis spans few decades.
  o += "<g class=\"y-axis\">\n";
  for (int e = lo; e <= hi; ++e) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (m != 1.0 && (e == hi || hi - lo > 3)) continue;
      const double v = m * std::pow(10.0, e);
      const double y = y_of(v);
      o += fmt::format(
          "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"0.5\"/>"
          "<text x=\"{4}\" y=\"{5}\" text-anchor=\"end\">{6}</text>\n",
          num(kLeft), num(y), num(kLeft + plot_w), m == 1.0 ? "#bbb" : "#e4e4e4", num(kLeft - 6),
          num(y + 3.5), xml_escape(fmt::format("{:g}{}", v, c.value_suffix)));
    }
  }
  o += fmt::format(
      "<text x=\"16\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {0})\">{1}"
      "</text>\n",
      num(top + kPlotH / 2), xml_escape(c.y_label));
  o += "</g>\n";

  // Bars.
  const double yb = y_of(c.baseline);
  for (size_t s = 0; s < c.series.size(); ++s) {
    const BarSeries& ser = c.series[s];
    o += fmt::format("<g class=\"series\" fill=\"{}\">\n", xml_escape(ser.color));
    for (size_t i = 0; i < n; ++i) {
      if (!drawable(ser.values[i])) continue;
      const double v = *ser.values[i];
      const double yv = y_of(v);
      const double x =
          x_of(i) + (slot - bar_w * static_cast<double>(k)) / 2 + bar_w * static_cast<double>(s);
      o += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}</title></rect>\n", num(x),
          num(std::min(yv, yb)), num(bar_w), num(std::max(1.0, std::abs(yv - yb))),
          xml_escape(fmt::format("{}: {} {:.3g}{}", c.categories[i], ser.name, v, c.value_suffix)));
    }
    o += "</g>\n";
  }

  // Frame and the reference line at the baseline.
  o += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\" "
      "stroke-width=\"0.8\"/>\n",
      num(kLeft), num(top), num(plot_w), num(kPlotH));
  o += fmt::format(
      "<line class=\"reference\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\" "
      "stroke-width=\"1\"/>\n",
      num(kLeft), num(yb), num(kLeft + plot_w));

  // Groups: separators and labels above the plot.
  o += "<g class=\"groups\">\n";
  for (const CategoryGroup& g : c.groups) {
    if (g.end < n)
      o += fmt::format(
          "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#888\" "
          "stroke-width=\"0.6\"/>\n",
          num(x_of(g.end)), num(top - 4), num(bottom));
    const double cx = (x_of(g.begin) + x_of(g.end)) / 2;
    if (vertical) {
      const std::string text = g.note.empty() ? g.label : g.label + "  " + g.note;
      o += fmt::format(
          "<text x=\"{0}\" y=\"{1}\" transform=\"rotate(-90 {0} {1})\" dy=\"3.5\">{2}</text>\n",
          num(cx), num(top - 6), xml_escape(text));
    } else {
      o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", num(cx),
                       num(top - 20), xml_escape(g.label));
      if (!g.note.empty())
        o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#444\">{}</text>\n",
                         num(cx), num(top - 7), xml_escape(g.note));
    }
  }
  o += "</g>\n";

  // Category labels, vertical under the axis.
  o += "<g class=\"x-labels\" font-size=\"9\">\n";
  for (size_t i = 0; i < n; ++i) {
    const double cx = x_of(i) + slot / 2;
    o += fmt::format(
        "<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\" transform=\"rotate(-90 {0} {1})\" "
        "dy=\"3\">{2}</text>\n",
        num(cx), num(bottom + 6), xml_escape(labels[i]));
  }
  if (n == 0)
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">no data</text>\n",
                     num(kLeft + plot_w / 2), num(top + kPlotH / 2));
  o += "</g>\n";
  o += "</svg>\n";
  return o;
}

}  // namespace sparsegen::bench
