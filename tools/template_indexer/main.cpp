// sparsegen_template_indexer: build-time tool that parses templates/*.cuh with Clang and writes
// the typed helper table (one descriptor per device helper) the emitters call through.
//
// Usage: sparsegen_template_indexer --out FILE --stubs DIR TEMPLATE.cuh...
//
// Every function defined directly in namespace `sg` is a helper; it must be __device__, have a
// unique name, and use only parameter types the typed table knows (codegen/template_types.h).
// Anything else fails the build with file:line and the reason. The .cuh files are parsed as C++17
// against the stub prelude in DIR (see stubs/sg_indexer_prelude.h for why not as CUDA).
#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/Decl.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/ASTUnit.h>
#include <clang/Tooling/Tooling.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Param {
  std::string name;
  std::string type;
  std::string kind;
};

struct TemplateParam {
  std::string name;
  std::string kind;
  std::string spelling;
};

struct Helper {
  std::string name;
  std::string header;
  std::string location;
  std::string return_kind;
  std::string return_type;
  std::vector<TemplateParam> tparams;
  std::vector<Param> params;
};

// Maps a parameter or return type to its Kind enumerator name, or nullopt when unsupported.
std::optional<std::string> kind_of(clang::QualType qt) {
  clang::QualType t = qt.getCanonicalType().getUnqualifiedType();
  if (t->isVoidType()) return "kVoid";
  if (t->isSpecificBuiltinType(clang::BuiltinType::Bool)) return "kBool";
  if (t->isSpecificBuiltinType(clang::BuiltinType::Int)) return "kI32";
  if (t->isSpecificBuiltinType(clang::BuiltinType::UInt)) return "kU32";
  if (t->isSpecificBuiltinType(clang::BuiltinType::Float)) return "kF32";
  if (t->isPointerType()) {
    clang::QualType pointee = t->getPointeeType();
    const bool is_const = pointee.isConstQualified();
    clang::QualType p = pointee.getUnqualifiedType();
    std::string base;
    if (p->isTemplateTypeParmType()) {
      base = "T";
    } else if (p->isSpecificBuiltinType(clang::BuiltinType::Float)) {
      base = "F32";
    } else if (p->isSpecificBuiltinType(clang::BuiltinType::Int)) {
      base = "I32";
    } else if (p->isSpecificBuiltinType(clang::BuiltinType::UInt)) {
      base = "U32";
    } else if (const auto* rd = p->getAsRecordDecl();
               rd != nullptr && rd->getName() == "TensorMap") {
      base =
          "TensorMap";  // sg::TensorMap (sg_bulk_copy.cuh), a __grid_constant__ parameter's address
    } else {
      return std::nullopt;
    }
    return std::string(is_const ? "kConstPtr" : "kPtr") + base;
  }
  return std::nullopt;
}

bool in_sg_namespace(const clang::FunctionDecl* fd) {
  const auto* ns = llvm::dyn_cast<clang::NamespaceDecl>(fd->getDeclContext());
  return ns != nullptr && ns->getName() == "sg" && ns->getDeclContext()->isTranslationUnit();
}

bool is_device(const clang::FunctionDecl* fd) {
  for (const auto* a : fd->specific_attrs<clang::AnnotateAttr>())
    if (a->getAnnotation() == "sg_device") return true;
  return false;
}

class HelperCollector : public clang::RecursiveASTVisitor<HelperCollector> {
 public:
  explicit HelperCollector(clang::ASTContext& ctx) : ctx_(ctx) {}

  bool VisitFunctionDecl(clang::FunctionDecl* fd) {
    if (!in_sg_namespace(fd) || !fd->isThisDeclarationADefinition()) return true;
    const clang::SourceManager& sm = ctx_.getSourceManager();
    const clang::PresumedLoc loc = sm.getPresumedLoc(fd->getLocation());
    std::string file = loc.isValid() ? loc.getFilename() : "<unknown>";
    const std::string where = file + ":" + std::to_string(loc.isValid() ? loc.getLine() : 0);
    Helper h;
    h.name = fd->getNameAsString();
    h.header = file.substr(file.find_last_of('/') + 1);
    h.location = where;
    if (!is_device(fd))
      fail(where, "helper sg::" + h.name + " is not __device__ (templates hold device code only)");
    if (seen_.count(h.name) != 0)
      fail(where, "helper sg::" + h.name + " is overloaded (first at " + seen_[h.name] +
                      "); the typed table needs one signature per name");
    seen_[h.name] = where;
    if (const clang::FunctionTemplateDecl* ft = fd->getDescribedFunctionTemplate()) {
      for (const clang::NamedDecl* p : *ft->getTemplateParameters()) {
        TemplateParam tp;
        tp.name = p->getNameAsString();
        if (llvm::isa<clang::TemplateTypeParmDecl>(p)) {
          tp.kind = "kType";
          tp.spelling = "typename " + tp.name;
        } else if (const auto* nt = llvm::dyn_cast<clang::NonTypeTemplateParmDecl>(p);
                   nt != nullptr && nt->getType()->isIntegerType()) {
          tp.kind = "kInt";
          tp.spelling = nt->getType().getAsString() + " " + tp.name;
        } else {
          fail(where, "template parameter '" + tp.name + "' of sg::" + h.name +
                          " is neither a type nor an integer");
        }
        h.tparams.push_back(tp);
      }
    }
    const auto ret = kind_of(fd->getReturnType());
    h.return_type = fd->getReturnType().getAsString();
    if (!ret)
      fail(where,
           "return type '" + h.return_type + "' of sg::" + h.name + " is not in the typed table");
    h.return_kind = ret.value_or("kVoid");
    for (const clang::ParmVarDecl* p : fd->parameters()) {
      Param pa;
      pa.name = p->getNameAsString();
      pa.type = p->getType().getAsString();
      const auto k = kind_of(p->getType());
      if (!k)
        fail(where, "parameter '" + pa.name + "' of sg::" + h.name + " has type '" + pa.type +
                        "', which the typed table does not know (add a Kind in "
                        "codegen/template_types.h and in tools/template_indexer/main.cpp)");
      pa.kind = k.value_or("kVoid");
      h.params.push_back(pa);
    }
    helpers_.push_back(h);
    return true;
  }

  const std::vector<Helper>& helpers() const { return helpers_; }
  int errors() const { return errors_; }

 private:
  void fail(const std::string& where, const std::string& what) {
    std::fprintf(stderr, "%s: error: template indexer: %s\n", where.c_str(), what.c_str());
    ++errors_;
  }

  clang::ASTContext& ctx_;
  std::vector<Helper> helpers_;
  std::map<std::string, std::string> seen_;
  int errors_ = 0;
};

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::string render(const std::vector<Helper>& helpers) {
  std::ostringstream o;
  o << "// Generated by sparsegen_template_indexer from templates/*.cuh. Do not edit.\n"
       "// One descriptor per device helper; emitters call helpers through tmpl::call().\n"
       "#pragma once\n\n#include <array>\n#include <string_view>\n\n"
       "#include \"codegen/template_types.h\"\n\nnamespace sparsegen::tmpl {\n\n";
  for (const Helper& h : helpers) {
    std::vector<std::string> tkinds, tspell, kinds, spell;
    for (const auto& t : h.tparams) {
      tkinds.push_back("TKind::" + t.kind);
      tspell.push_back(t.spelling);
    }
    for (const auto& p : h.params) {
      kinds.push_back("Kind::" + p.kind);
      spell.push_back(p.type + " " + p.name);
    }
    std::string sig = (h.tparams.empty() ? "" : "template <" + join(tspell, ", ") + "> ") +
                      h.return_type + " sg::" + h.name + "(" + join(spell, ", ") + ")";
    o << "// " << sig << "  [" << h.header << "]\n";
    o << "struct " << h.name << "_t {\n";
    o << "  static constexpr std::string_view kQualifiedName = \"sg::" << h.name << "\";\n";
    o << "  static constexpr std::string_view kHeader = \"" << h.header << "\";\n";
    o << "  static constexpr std::string_view kSignature = \"" << sig << "\";\n";
    o << "  using TemplateParams = TKindList<" << join(tkinds, ", ") << ">;\n";
    o << "  using Params = KindList<" << join(kinds, ", ") << ">;\n";
    o << "  static constexpr Kind kReturn = Kind::" << h.return_kind << ";\n";
    o << "};\n";
    o << "inline constexpr " << h.name << "_t " << h.name << "{};\n\n";
  }
  o << "// Every indexed helper: qualified name and defining header.\n";
  o << "struct IndexedHelper {\n  std::string_view name;\n  std::string_view header;\n"
       "  std::string_view signature;\n};\n";
  o << "inline constexpr std::array<IndexedHelper, " << helpers.size() << "> kAllHelpers = {{\n";
  for (const Helper& h : helpers)
    o << "    {" << h.name << "_t::kQualifiedName, " << h.name << "_t::kHeader, " << h.name
      << "_t::kSignature},\n";
  o << "}};\n\n}  // namespace sparsegen::tmpl\n";
  return o.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::string out, stubs;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else if (a == "--stubs" && i + 1 < argc) {
      stubs = argv[++i];
    } else {
      inputs.push_back(a);
    }
  }
  if (out.empty() || stubs.empty() || inputs.empty()) {
    std::fprintf(stderr,
                 "usage: sparsegen_template_indexer --out FILE --stubs DIR TEMPLATE.cuh...\n");
    return 2;
  }
  std::string code;
  for (const auto& f : inputs) code += "#include \"" + f + "\"\n";
  const std::vector<std::string> args = {"-xc++",
                                         "-std=c++17",
                                         "-nostdinc",
                                         "-I" + stubs,
                                         "-include",
                                         stubs + "/sg_indexer_prelude.h",
                                         "-Wno-unknown-pragmas",
                                         "-Wno-pragma-once-outside-header"};
  std::unique_ptr<clang::ASTUnit> ast = clang::tooling::buildASTFromCodeWithArgs(
      code, args, "sg_template_index_tu.cpp", "sparsegen_template_indexer");
  if (!ast || ast->getDiagnostics().hasErrorOccurred()) {
    std::fprintf(stderr,
                 "template indexer: Clang could not parse templates/*.cuh (errors above)\n");
    return 1;
  }
  HelperCollector collector(ast->getASTContext());
  collector.TraverseDecl(ast->getASTContext().getTranslationUnitDecl());
  if (collector.errors() != 0) return 1;
  if (collector.helpers().empty()) {
    std::fprintf(stderr, "template indexer: no helpers found in namespace sg\n");
    return 1;
  }
  const std::string text = render(collector.helpers());
  // Rewrite only on change so that the emitters are not rebuilt for nothing.
  std::ifstream old(out);
  std::stringstream prev;
  prev << old.rdbuf();
  if (prev.str() != text) {
    std::ofstream f(out, std::ios::trunc);
    f << text;
    if (!f) {
      std::fprintf(stderr, "template indexer: cannot write %s\n", out.c_str());
      return 1;
    }
  }
  return 0;
}
