// The entry point of the layer checks (cmake/layers.cmake): each links one area's whole library.
int main() {
  return 0;
}
