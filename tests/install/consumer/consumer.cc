// consumer MODEL.onnx [PLUGIN.so EP_TYPE]: runs a model taking x [N,3] float on the CPU, or on the EP of a
// plugin library, and prints the providers used and the first output.
#include <iostream>

#include <tessera/tessera.h>

int main(int argc, char** argv) {
  if (argc != 2 && argc != 4) {
    std::cerr << "usage: consumer MODEL.onnx [PLUGIN.so EP_TYPE]\n";
    return 2;
  }
  tessera::Environment env;
  tessera::SessionOptions options;
  if (argc == 4) {
    env.RegisterEpLibrary("plugin", argv[2]);
    options.AddProvider(argv[3]);
  }
  tessera::Session session(env, argv[1], options);
  for (const std::string& ep : session.providers()) std::cout << "provider " << ep << "\n";
  const tessera::Tensor x = tessera::Tensor::FromVector<float>({2, 3}, {-1, 2, -3, 4, -5, 6});
  const std::vector<tessera::Value> outputs = session.Run({{"x", x}});
  std::cout << "output";
  for (float v : outputs.at(0).tensor().ToVector<float>()) std::cout << " " << v;
  std::cout << "\n";
  return 0;
}
