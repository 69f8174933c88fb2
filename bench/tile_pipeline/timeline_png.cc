#include "timeline_png.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>

namespace tessera::bench {

namespace {

// 5x7 glyphs for the labels, one string of 7 rows of 5 bits each ('#' set).
const std::map<char, std::array<const char*, 7>>& Font() {
  static const std::map<char, std::array<const char*, 7>> font = {
      {'0', {" ### ", "#   #", "#  ##", "# # #", "##  #", "#   #", " ### "}},
      {'1', {"  #  ", " ##  ", "  #  ", "  #  ", "  #  ", "  #  ", " ### "}},
      {'2', {" ### ", "#   #", "    #", "   # ", "  #  ", " #   ", "#####"}},
      {'3', {"#### ", "    #", "    #", " ### ", "    #", "    #", "#### "}},
      {'4', {"   # ", "  ## ", " # # ", "#  # ", "#####", "   # ", "   # "}},
      {'5', {"#####", "#    ", "#### ", "    #", "    #", "#   #", " ### "}},
      {'6', {" ### ", "#    ", "#    ", "#### ", "#   #", "#   #", " ### "}},
      {'7', {"#####", "    #", "   # ", "  #  ", " #   ", " #   ", " #   "}},
      {'8', {" ### ", "#   #", "#   #", " ### ", "#   #", "#   #", " ### "}},
      {'9', {" ### ", "#   #", "#   #", " ####", "    #", "    #", " ### "}},
      {'.', {"     ", "     ", "     ", "     ", "     ", " ##  ", " ##  "}},
      {'-', {"     ", "     ", "     ", " ### ", "     ", "     ", "     "}},
      {'=', {"     ", "     ", "#####", "     ", "#####", "     ", "     "}},
      {',', {"     ", "     ", "     ", "     ", " ##  ", "  #  ", " #   "}},
      {'/', {"    #", "    #", "   # ", "  #  ", " #   ", "#    ", "#    "}},
      {'x', {"     ", "     ", "#   #", " # # ", "  #  ", " # # ", "#   #"}},
      {'a', {"     ", "     ", " ### ", "    #", " ####", "#   #", " ####"}},
      {'b', {"#    ", "#    ", "#### ", "#   #", "#   #", "#   #", "#### "}},
      {'c', {"     ", "     ", " ### ", "#    ", "#    ", "#    ", " ### "}},
      {'d', {"    #", "    #", " ####", "#   #", "#   #", "#   #", " ####"}},
      {'e', {"     ", "     ", " ### ", "#   #", "#####", "#    ", " ### "}},
      {'f', {"  ## ", " #   ", "#### ", " #   ", " #   ", " #   ", " #   "}},
      {'g', {"     ", " ####", "#   #", "#   #", " ####", "    #", " ### "}},
      {'h', {"#    ", "#    ", "#### ", "#   #", "#   #", "#   #", "#   #"}},
      {'i', {"  #  ", "     ", " ##  ", "  #  ", "  #  ", "  #  ", " ### "}},
      {'k', {"#    ", "#    ", "#  # ", "# #  ", "##   ", "# #  ", "#  # "}},
      {'l', {" ##  ", "  #  ", "  #  ", "  #  ", "  #  ", "  #  ", " ### "}},
      {'m', {"     ", "     ", "## # ", "# # #", "# # #", "# # #", "# # #"}},
      {'n', {"     ", "     ", "#### ", "#   #", "#   #", "#   #", "#   #"}},
      {'o', {"     ", "     ", " ### ", "#   #", "#   #", "#   #", " ### "}},
      {'p', {"     ", "     ", "#### ", "#   #", "#### ", "#    ", "#    "}},
      {'q', {"     ", " ####", "#   #", "#   #", " ####", "    #", "    #"}},
      {'r', {"     ", "     ", "# ## ", "##   ", "#    ", "#    ", "#    "}},
      {'s', {"     ", "     ", " ####", "#    ", " ### ", "    #", "#### "}},
      {'t', {" #   ", " #   ", "#### ", " #   ", " #   ", " #   ", "  ## "}},
      {'u', {"     ", "     ", "#   #", "#   #", "#   #", "#   #", " ####"}},
      {'v', {"     ", "     ", "#   #", "#   #", "#   #", " # # ", "  #  "}},
      {'w', {"     ", "     ", "#   #", "#   #", "# # #", "# # #", " # # "}},
      {'y', {"     ", "#   #", "#   #", "#   #", " ####", "    #", " ### "}},
      {'z', {"     ", "     ", "#####", "   # ", "  #  ", " #   ", "#####"}},
      {'(', {"   # ", "  #  ", " #   ", " #   ", " #   ", "  #  ", "   # "}},
      {')', {" #   ", "  #  ", "   # ", "   # ", "   # ", "  #  ", " #   "}},
      {':', {"     ", " ##  ", " ##  ", "     ", " ##  ", " ##  ", "     "}},
  };
  return font;
}

struct Image {
  int width, height;
  std::vector<uint8_t> rgb;
  Image(int w, int h) : width(w), height(h), rgb(static_cast<size_t>(w) * h * 3, 255) {}
  void Fill(int x0, int y0, int x1, int y1, std::array<uint8_t, 3> c) {
    for (int y = std::max(0, y0); y < std::min(height, y1); ++y)
      for (int x = std::max(0, x0); x < std::min(width, x1); ++x)
        std::copy(c.begin(), c.end(), rgb.begin() + (static_cast<size_t>(y) * width + x) * 3);
  }
  void Text(int x, int y, const std::string& text, std::array<uint8_t, 3> c = {0, 0, 0}) {
    for (char ch : text) {
      auto it = Font().find(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
      if (it != Font().end())
        for (int r = 0; r < 7; ++r)
          for (int k = 0; k < 5; ++k)
            if (it->second[static_cast<size_t>(r)][k] == '#') Fill(x + k, y + r, x + k + 1, y + r + 1, c);
      x += 6;
    }
  }
};

uint32_t Crc32(const uint8_t* data, size_t n, uint32_t crc = 0) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

void Put32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

void Chunk(std::vector<uint8_t>& file, const char* type, const std::vector<uint8_t>& data) {
  Put32(file, static_cast<uint32_t>(data.size()));
  std::vector<uint8_t> body(type, type + 4);
  body.insert(body.end(), data.begin(), data.end());
  file.insert(file.end(), body.begin(), body.end());
  Put32(file, Crc32(body.data(), body.size()));
}

std::vector<uint8_t> Png(const Image& image) {
  std::vector<uint8_t> raw;  // filter byte 0 + RGB per row
  for (int y = 0; y < image.height; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), image.rgb.begin() + static_cast<ptrdiff_t>(y) * image.width * 3,
               image.rgb.begin() + static_cast<ptrdiff_t>(y + 1) * image.width * 3);
  }
  std::vector<uint8_t> z = {0x78, 0x01};  // zlib header, stored blocks of at most 65535 bytes
  for (size_t at = 0; at < raw.size() || at == 0;) {
    const size_t n = std::min<size_t>(65535, raw.size() - at);
    z.push_back(at + n == raw.size() ? 1 : 0);
    z.push_back(static_cast<uint8_t>(n));
    z.push_back(static_cast<uint8_t>(n >> 8));
    z.push_back(static_cast<uint8_t>(~n));
    z.push_back(static_cast<uint8_t>(~n >> 8));
    z.insert(z.end(), raw.begin() + static_cast<ptrdiff_t>(at), raw.begin() + static_cast<ptrdiff_t>(at + n));
    at += n;
    if (n == 0) break;
  }
  uint32_t a = 1, b = 0;
  for (uint8_t v : raw) {
    a = (a + v) % 65521;
    b = (b + a) % 65521;
  }
  Put32(z, (b << 16) | a);
  std::vector<uint8_t> file = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::vector<uint8_t> header;
  Put32(header, static_cast<uint32_t>(image.width));
  Put32(header, static_cast<uint32_t>(image.height));
  header.insert(header.end(), {8, 2, 0, 0, 0});  // 8 bits, RGB
  Chunk(file, "IHDR", header);
  Chunk(file, "IDAT", z);
  Chunk(file, "IEND", {});
  return file;
}

}  // namespace

void WriteTimelinePng(const std::string& path, const std::vector<TileTraceSpan>& spans, const std::string& title,
                      int width) {
  const std::vector<std::string> tracks = {"host", "upload", "compute", "download", "blend"};
  const int left = 80, right = 20, top = 30, row = 36, gap = 8;
  const int height = top + static_cast<int>(tracks.size()) * (row + gap) + 30;
  Image image(width, height);
  double end = 1;
  for (const TileTraceSpan& s : spans) end = std::max(end, s.end_us);
  const double px_per_us = (width - left - right) / end;
  image.Text(8, 8, title);
  const std::array<std::array<uint8_t, 3>, 6> palette = {{{31, 119, 180}, {255, 127, 14}, {44, 160, 44},
                                                          {214, 39, 40}, {148, 103, 189}, {140, 86, 75}}};
  for (size_t t = 0; t < tracks.size(); ++t) {
    const int y = top + static_cast<int>(t) * (row + gap);
    image.Fill(left, y, width - right, y + row, {240, 240, 240});
    image.Text(8, y + row / 2 - 3, tracks[t]);
    for (const TileTraceSpan& s : spans) {
      if (s.track != tracks[t]) continue;
      const int x0 = left + static_cast<int>(s.start_us * px_per_us);
      const int x1 = std::max(x0 + 1, left + static_cast<int>(s.end_us * px_per_us));
      const bool waiting = s.name == "wait";
      const auto color = waiting ? std::array<uint8_t, 3>{200, 200, 200} : palette[static_cast<size_t>(s.tile) % 6];
      const int inset = waiting ? row / 3 : 2;  // waits: a thin grey bar
      image.Fill(x0, y + inset, x1, y + row - inset, color);
    }
  }
  // Scale: a tick per step of 1, 2, 5 x 10^k ms, about 10 of them.
  const double end_ms = end / 1000;
  double step = 1e-3;
  for (int k = 0; end_ms / step > 12; ++k) step *= k % 3 == 1 ? 2.5 : 2;  // 1, 2, 5, 10, 20, 50, ...
  const int axis = height - 24;
  image.Fill(left, axis, width - right, axis + 1, {0, 0, 0});
  for (double ms = 0; ms <= end_ms + 1e-9; ms += step) {
    const int x = left + static_cast<int>(ms * 1000 * px_per_us);
    image.Fill(x, axis, x + 1, axis + 5, {0, 0, 0});
    char label[32];
    std::snprintf(label, sizeof(label), step < 1 ? "%.1f" : "%.0f", ms);
    image.Text(x - 6, axis + 8, label);
  }
  image.Text(width - right - 18, axis + 8 - 12, "ms");
  const std::vector<uint8_t> png = Png(image);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace tessera::bench
