// Vite turns CSS imports into a stylesheet link; TypeScript only needs to know the module exists.
declare module "*.css"
