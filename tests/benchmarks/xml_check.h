// A small XML well-formedness check for the SVG plots' tests: balanced and properly nested tags,
// quoted attributes, no raw '<' or stray '&' in text or attribute values (only the five named
// entities and numeric references), one root element of the expected name. Not a validator.
#pragma once

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace sparsegen::testing {

// Empty when `xml` is well-formed with root element `root`, else what is wrong and where.
inline std::string xml_problem(std::string_view xml, std::string_view root = "svg") {
  std::vector<std::string> open;
  int roots = 0;
  size_t i = 0;
  auto at = [&](size_t pos) { return " at byte " + std::to_string(pos); };
  auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' ||
           c == '.';
  };
  auto entity_ok = [&](size_t amp) {  // xml[amp] == '&'
    const size_t semi = xml.find(';', amp);
    if (semi == std::string_view::npos || semi - amp > 8) return false;
    const std::string_view e = xml.substr(amp + 1, semi - amp - 1);
    if (e == "amp" || e == "lt" || e == "gt" || e == "quot" || e == "apos") return true;
    return e.size() > 1 && e[0] == '#';
  };
  auto name = [&]() {
    const size_t b = i;
    while (i < xml.size() && name_char(xml[i])) ++i;
    return std::string(xml.substr(b, i - b));
  };
  auto spaces = [&]() {
    while (i < xml.size() && std::isspace(static_cast<unsigned char>(xml[i]))) ++i;
  };
  while (i < xml.size()) {
    if (xml[i] != '<') {  // text
      if (xml[i] == '&' && !entity_ok(i)) return "bad entity" + at(i);
      if (open.empty() && !std::isspace(static_cast<unsigned char>(xml[i])))
        return "text outside the root element" + at(i);
      ++i;
      continue;
    }
    if (xml.substr(i, 2) == "<?") {
      const size_t e = xml.find("?>", i);
      if (e == std::string_view::npos) return "unterminated <?" + at(i);
      i = e + 2;
      continue;
    }
    if (xml.substr(i, 4) == "<!--") {
      const size_t e = xml.find("-->", i);
      if (e == std::string_view::npos) return "unterminated comment" + at(i);
      i = e + 3;
      continue;
    }
    if (xml.substr(i, 2) == "</") {
      const size_t start = i;
      i += 2;
      const std::string n = name();
      spaces();
      if (i >= xml.size() || xml[i] != '>') return "bad end tag" + at(start);
      if (open.empty() || open.back() != n)
        return "</" + n + "> does not close <" + (open.empty() ? "" : open.back()) + ">" +
               at(start);
      open.pop_back();
      ++i;
      continue;
    }
    const size_t start = i;
    ++i;
    const std::string n = name();
    if (n.empty()) return "bad start tag" + at(start);
    if (open.empty() && ++roots > 1) return "a second root element" + at(start);
    if (open.empty() && n != root)
      return "root element <" + n + ">, not <" + std::string(root) + ">";
    std::vector<std::string> attrs;
    for (;;) {
      spaces();
      if (i >= xml.size()) return "unterminated tag <" + n + ">" + at(start);
      if (xml[i] == '>') {
        open.push_back(n);
        ++i;
        break;
      }
      if (xml.substr(i, 2) == "/>") {
        i += 2;
        break;
      }
      const std::string a = name();
      if (a.empty()) return "bad attribute in <" + n + ">" + at(i);
      for (const std::string& seen : attrs)
        if (seen == a) return "attribute " + a + " twice in <" + n + ">" + at(start);
      attrs.push_back(a);
      spaces();
      if (i >= xml.size() || xml[i] != '=') return "attribute " + a + " without a value" + at(i);
      ++i;
      spaces();
      if (i >= xml.size() || (xml[i] != '"' && xml[i] != '\''))
        return "unquoted attribute " + a + at(i);
      const char q = xml[i++];
      for (; i < xml.size() && xml[i] != q; ++i) {
        if (xml[i] == '<') return "'<' in attribute " + a + at(i);
        if (xml[i] == '&' && !entity_ok(i)) return "bad entity in attribute " + a + at(i);
      }
      if (i >= xml.size()) return "unterminated attribute " + a + at(start);
      ++i;
    }
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  if (roots == 0) return "no root element";
  return {};
}

}  // namespace sparsegen::testing
